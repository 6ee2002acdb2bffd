import type { CommandRunner } from '../../provider';

/**
 * How the providers read a CommandRunner's failures. The runner rejects when the command cannot
 * start or exits non-zero; its Error should carry `code: 'ENOENT'` when the executable is missing
 * (Node's spawn does) and, in its message, what the command printed, so that providers can tell
 * "tool not installed" from "tool ran and reported a condition" (e.g. "No devices were found").
 */

/** The message of whatever a runner rejected with. */
export function failureText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** True when the runner could not start the executable at all: the tool is not installed. */
export function isToolMissing(error: unknown): boolean {
  if (typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ENOENT') {
    return true;
  }
  return /\bENOENT\b|command not found|not found in \$?PATH/i.test(failureText(error));
}

/** `nvidia-smi topo -m`, for messages. */
export function commandLine(command: string, args: readonly string[]): string {
  return [command, ...args].join(' ');
}

/**
 * Runs a vendor tool; a failure becomes an Error that names the provider and the command, so the
 * agent's "last detection failed" status tells an operator what to run by hand.
 */
export async function runVendorTool(
  run: CommandRunner,
  provider: string,
  command: string,
  args: readonly string[],
): Promise<string> {
  try {
    return await run(command, [...args]);
  } catch (error) {
    throw toolFailure(provider, command, args, error);
  }
}

/** The Error a provider throws when one of its commands failed: provider, command line, cause. */
export function toolFailure(provider: string, command: string, args: readonly string[], cause: unknown): Error {
  return new Error(`${provider}: \`${commandLine(command, args)}\` failed: ${failureText(cause)}`, { cause });
}

/**
 * True when the tool can be started on this node. A tool that starts but exits non-zero (no
 * devices, driver not loaded) still counts: detect() then reports why it failed, which says more
 * to an operator than "provider unavailable".
 */
export async function toolStarts(run: CommandRunner, command: string, args: readonly string[]): Promise<boolean> {
  try {
    await run(command, [...args]);
    return true;
  } catch (error) {
    return !isToolMissing(error);
  }
}

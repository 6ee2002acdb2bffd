import type { CommandRunner } from '../../provider';

/** What a scripted command answers: its stdout, or the error the runner rejects with. */
export type ScriptedAnswer = string | Error;

/**
 * A CommandRunner for provider specs: answers each command line from the first entry whose key
 * the line starts with, and records the lines it was asked to run.
 */
export function scriptedRunner(answers: Record<string, ScriptedAnswer>): CommandRunner & { calls: string[] } {
  const calls: string[] = [];
  const runner = async (command: string, args: string[]): Promise<string> => {
    const line = [command, ...args].join(' ');
    calls.push(line);
    const key = Object.keys(answers).find((prefix) => line.startsWith(prefix));
    if (key === undefined) throw new Error(`unexpected command in test: ${line}`);
    const answer = answers[key];
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return Object.assign(runner, { calls });
}

/** The error a runner built on child_process rejects with when the command exits non-zero. */
export function exitError(code: number, output: string): Error {
  return new Error(`Command failed with exit code ${code}\n${output}`);
}

/** The error Node's spawn gives when the executable is not on PATH. */
export function missingTool(command: string): Error {
  return Object.assign(new Error(`spawn ${command} ENOENT`), { code: 'ENOENT' });
}

import { execFile } from 'child_process';
import { CommandRunner } from '@gpufleet/device-inventory';

/** Runs a vendor tool with a deadline; a non-zero exit is an error carrying its stderr. */
export function execCommandRunner(timeoutMs = 30_000): CommandRunner {
  return (command, args) =>
    new Promise((resolve, reject) => {
      execFile(command, args, { timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
        if (err) {
          // Keep what the tool printed (providers read e.g. "No devices were found" from it)
          // and Node's error code (ENOENT: the tool is not installed).
          const why = (stderr || stdout || err.message).trim().split('\n').slice(-5).join(' | ');
          const failure = new Error(`${command} ${args.join(' ')} failed: ${why}`) as Error & { code?: unknown };
          failure.code = (err as NodeJS.ErrnoException).code;
          reject(failure);
          return;
        }
        resolve(stdout);
      });
    });
}

import { execFile } from 'child_process';
import { CommandRunner } from '@gpufleet/device-inventory';

/** Runs a vendor tool with a deadline; a non-zero exit is an error carrying its stderr. */
export function execCommandRunner(timeoutMs = 30_000): CommandRunner {
  return (command, args) =>
    new Promise((resolve, reject) => {
      execFile(command, args, { timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
        if (err) {
          const why = (stderr || stdout || err.message).trim().split('\n').slice(-3).join(' | ');
          reject(new Error(`${command} ${args.join(' ')} failed: ${why}`));
          return;
        }
        resolve(stdout);
      });
    });
}

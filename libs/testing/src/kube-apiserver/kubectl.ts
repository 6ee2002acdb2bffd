import { execFile } from 'node:child_process';

/** Where the machine image's kubectl is (a dispatcher over 1.27–1.33; 1.32 by default). */
export const KUBECTL = '/usr/bin/kubectl';

export interface KubectlRun {
  /** The exit status; 1 when kubectl could not run or was killed at the timeout. */
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real kubectl against a kubeconfig (the simulator's `kubeconfigPath`), with a cache
 * directory of the test's own so runs do not share discovery caches. Never rejects: the exit
 * status and output say what happened.
 */
export function runKubectl(kubeconfigPath: string, cacheDir: string, args: readonly string[], timeoutMs = 20_000): Promise<KubectlRun> {
  return new Promise((done) => {
    execFile(KUBECTL, ['--kubeconfig', kubeconfigPath, '--cache-dir', cacheDir, ...args], { timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

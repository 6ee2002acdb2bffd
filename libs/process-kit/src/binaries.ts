import { execFileSync } from 'child_process';

const INSTALL: Record<string, string> = {
  'nats-server': 'apt-get install -y nats-server   (or download from the NATS releases page)',
  'redis-server': 'apt-get install -y redis-server',
};

/** Absolute path of a server binary, or an error that says how to install it. */
export function requireBinary(name: string): string {
  for (const candidate of [name, `/usr/sbin/${name}`, `/usr/bin/${name}`, `/usr/local/bin/${name}`]) {
    try {
      return execFileSync('sh', ['-c', `command -v ${candidate}`], { encoding: 'utf8' }).trim();
    } catch {
      // try the next location: /usr/sbin is not on every user's PATH
    }
  }
  throw new Error(`${name} is not installed; install it with: ${INSTALL[name] ?? `your package manager (${name})`}`);
}

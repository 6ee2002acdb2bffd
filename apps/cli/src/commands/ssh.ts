import { spawn } from 'child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'fs';
import { constants, tmpdir } from 'os';
import { join } from 'path';
import { requireBinary } from '@gpufleet/process-kit';
import { knownHostsLine, sshArgv, sshTarget } from '../ssh/ssh-argv';
import { getInstance } from './instances';
import { connectClients } from './get';

export interface SshOptions {
  scheduler: string;
  namespace: string;
  name: string;
  identityFile?: string;
  tty?: boolean;
  command: string[];
}

function sshBinary(): string {
  try {
    return requireBinary('ssh');
  } catch {
    throw new Error('ssh is not installed (gpufleet ssh runs the OpenSSH client); install it with: apt-get install -y openssh-client (or brew install openssh)');
  }
}

/**
 * `gpufleet ssh INSTANCE [-- COMMAND...]`: runs the system ssh against a Running instance with
 * only its own host key trusted, inheriting the terminal. Resolves to ssh's exit status.
 */
export async function runSsh(o: SshOptions): Promise<number> {
  if (o.identityFile !== undefined && !existsSync(o.identityFile)) throw new Error(`-i ${o.identityFile}: no such file`);
  const ssh = sshBinary();
  const clients = connectClients(o.scheduler, o.namespace);
  let instance;
  try {
    instance = await getInstance(clients, o.namespace, o.name);
  } finally {
    clients.close();
  }
  const target = sshTarget(instance, o.namespace, o.name);
  const line = knownHostsLine(target.host, target.port, target.hostKey);

  const dir = mkdtempSync(join(tmpdir(), 'gpufleet-ssh-'));
  const knownHosts = join(dir, 'known_hosts');
  // While ssh runs, a Ctrl-C belongs to it (and the remote side), not to this process.
  const ignore = () => undefined;
  try {
    writeFileSync(knownHosts, `${line}\n`, { mode: 0o600 });
    const argv = sshArgv({ target, knownHostsFile: knownHosts, identityFile: o.identityFile, tty: o.tty, command: o.command });
    process.on('SIGINT', ignore);
    process.on('SIGQUIT', ignore);
    return await new Promise<number>((resolve, reject) => {
      const child = spawn(ssh, argv, { stdio: 'inherit' });
      child.once('error', (err) => reject(new Error(`cannot run ${ssh}: ${err.message}`)));
      child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] ?? 0 : 0)));
    });
  } finally {
    process.off('SIGINT', ignore);
    process.off('SIGQUIT', ignore);
    rmSync(dir, { recursive: true, force: true });
  }
}

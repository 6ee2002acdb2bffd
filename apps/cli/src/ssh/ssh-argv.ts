import { GPUInstance, InstancePhase } from '@gpufleet/contracts';
import { instancePhaseName } from '../output/instances';

/** Where an instance's sshd is reached, and the host key it must present. */
export interface SshTarget {
  host: string;
  port: number;
  user: string;
  /** OpenSSH host key line: "ssh-ed25519 AAAA… [comment]". */
  hostKey: string;
}

/**
 * The target of a Running instance, or an error a user can act on (wrong phase, no address or
 * host key yet).
 */
export function sshTarget(instance: GPUInstance, namespace: string, name: string): SshTarget {
  const s = instance.status;
  const phase = s?.phase ?? InstancePhase.INSTANCE_PHASE_UNSPECIFIED;
  const ref = `instance ${namespace}/${name}`;
  if (phase !== InstancePhase.INSTANCE_PHASE_RUNNING) {
    const n = `${name}${namespace === 'default' ? '' : ` -n ${namespace}`}`;
    const hint =
      phase === InstancePhase.INSTANCE_PHASE_STOPPED
        ? `start it with \`gpufleet start instance ${n} --wait\``
        : phase === InstancePhase.INSTANCE_PHASE_PENDING || phase === InstancePhase.INSTANCE_PHASE_STARTING
          ? `wait for Running: \`gpufleet get instance ${n} -w\``
          : phase === InstancePhase.INSTANCE_PHASE_FAILED
            ? `see \`gpufleet describe instance ${n}\` and \`gpufleet logs ${n} --sshd\``
            : `see \`gpufleet describe instance ${n}\``;
    throw new Error(`FAILED_PRECONDITION: ${ref} is ${instancePhaseName(phase)}, not Running${s?.message ? ` (${s.message})` : ''}; ${hint}`);
  }
  if (!s?.sshHost || !s.sshPort) throw new Error(`UNAVAILABLE: ${ref} is Running but reports no SSH address yet; try again in a moment`);
  if (!s.sshHostKey.trim()) throw new Error(`UNAVAILABLE: ${ref} reports no SSH host key, so its sshd cannot be verified; try again in a moment`);
  return { host: s.sshHost, port: s.sshPort, user: s.sshUser || 'root', hostKey: s.sshHostKey.trim() };
}

const KEY_TYPE = /^(ssh-|ecdsa-|sk-)/;

/**
 * One known_hosts line for the instance's sshd. OpenSSH looks a non-standard port up as
 * `[host]:port`, port 22 as the bare host. A key line that already starts with host patterns
 * has them replaced.
 */
export function knownHostsLine(host: string, port: number, hostKey: string): string {
  const tokens = hostKey.trim().split(/\s+/);
  const start = tokens.findIndex((t) => KEY_TYPE.test(t));
  if (start < 0 || tokens.length < start + 2) throw new Error(`the instance's SSH host key is not an OpenSSH key line: ${JSON.stringify(hostKey.slice(0, 60))}`);
  const pattern = port === 22 ? host : `[${host}]:${port}`;
  return `${pattern} ${tokens.slice(start, start + 2).join(' ')}`;
}

export interface SshArgvOptions {
  target: Pick<SshTarget, 'host' | 'port' | 'user'>;
  /** A file holding exactly the instance's host key (see knownHostsLine). */
  knownHostsFile: string;
  identityFile?: string;
  /** Force a pseudo-terminal (ssh -t), e.g. for an interactive program given as the command. */
  tty?: boolean;
  /** Run this instead of a login shell; ssh joins the words with spaces for the remote shell. */
  command?: readonly string[];
}

/**
 * The argv (without "ssh") for one session. The instance's host key is the only one trusted
 * (a private known_hosts file, strict checking, no global file, nothing written back). No
 * BatchMode: the prompts it would suppress cannot come up (the host key is pinned, password
 * and keyboard-interactive logins are off), and it would refuse a passphrase-protected key.
 */
export function sshArgv(o: SshArgvOptions): string[] {
  const args = [
    '-p', String(o.target.port),
    '-o', `UserKnownHostsFile=${o.knownHostsFile}`,
    '-o', 'GlobalKnownHostsFile=/dev/null',
    '-o', 'StrictHostKeyChecking=yes',
    '-o', 'CheckHostIP=no',
    '-o', 'UpdateHostKeys=no',
    '-o', 'PasswordAuthentication=no',
    '-o', 'KbdInteractiveAuthentication=no',
  ];
  if (o.identityFile) args.push('-i', o.identityFile, '-o', 'IdentitiesOnly=yes');
  if (o.tty) args.push('-t');
  // "--" ends ssh's options: a destination or command word starting with "-" is not taken for one.
  args.push('--', `${o.target.user}@${o.target.host}`);
  if (o.command && o.command.length > 0) args.push(...o.command);
  return args;
}

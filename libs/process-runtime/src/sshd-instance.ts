import { execFileSync } from 'child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync, type Stats } from 'fs';
import { userInfo } from 'os';
import { dirname, isAbsolute, join, resolve } from 'path';
import { freePort, requireBinary } from '@gpufleet/process-kit';
import { ProcessRuntimeError, type BackoffPolicy, type ProcessSandbox, type ResourceLimits, type ProcessSpec, type ProcessStatus, type RestartPolicy } from '@gpufleet/process-spec';
import { SupervisedProcess, type SupervisorOptions } from './supervised-process';

/**
 * A GPU instance's SSH access: a real OpenSSH `sshd` of its own, in a directory of its own, with
 * its own host key, port, authorized keys and login environment. Public keys only: passwords,
 * keyboard-interactive and host-based logins are off, and only the user the runtime runs as
 * may log in (`AllowUsers`), root included when the runtime is root. Every session (shell,
 * command, sftp) goes through `login.sh` (`ForceCommand`), which loads the instance's
 * environment (e.g. `CUDA_VISIBLE_DEVICES`) and starts in its working directory: sshd itself
 * always starts sessions in the user's home, and `~/.ssh/rc` runs in a separate process that
 * cannot change the session's directory.
 */
export interface SshdInstanceOptions {
  /** The instance name: letters, digits, ".", "_", "-". */
  id: string;
  /** Absolute; the instance lives in `<baseDir>/<id>`, created 0700 and removed by stop(). */
  baseDir: string;
  /** OpenSSH public key lines ("ssh-ed25519 AAAA… comment"), without options. */
  authorizedKeys: readonly string[];
  /** The login environment, e.g. from `devicesEnv()`. */
  env?: Readonly<Record<string, string>>;
  /** Where sessions start; created when missing. Default `<dir>/work` (removed with the instance). */
  workDir?: string;
  /** Default 127.0.0.1. */
  listenAddress?: string;
  /** Default: a free port. */
  port?: number;
  /** Default `<dir>/sshd.log` (sshd runs with -e: its log goes to stderr). */
  logFile?: string;
  /** Default /usr/sbin/sshd (or wherever it is installed). */
  sshdPath?: string;
  sshKeygenPath?: string;
  /** How long start() waits for the port to accept connections. Default 15000 ms. */
  startTimeoutMs?: number;
  /** Default `always`. */
  restart?: RestartPolicy;
  backoff?: BackoffPolicy;
  /** Default 5000 ms. */
  stopGraceMs?: number;
  supervisor?: SupervisorOptions;
  /**
   * Run sshd confined, as the pod's own `user` (then the only login): the working directory is
   * the sandbox's writable directory and the instance directory is bound in read-only, so a
   * session cannot rewrite the config, keys or login script (the runtime, root, writes them).
   */
  sandbox?: Omit<ProcessSandbox, 'writable'> & { readonly user: string };
  /** cgroup limits of sshd, and so of every session. */
  limits?: ResourceLimits;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const KEY_LINE =
  /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\r\n]*)?$/;
/** Characters sshd_config would need quoting or %-escaping for. */
const PLAIN_PATH = /^\/[A-Za-z0-9._/+@=,-]*$/;
const BIND_FAILED = /Bind to port \d+ .* failed|Cannot bind any address|Address already in use/;

export class SshdInstance {
  readonly dir: string;
  readonly workDir: string;
  private process: SupervisedProcess | undefined;
  private currentPort: number | undefined;
  private hostKey: string | undefined;

  constructor(readonly options: SshdInstanceOptions) {
    const bad = (sentence: string): never => {
      throw new ProcessRuntimeError('INVALID_ARGUMENT', `GPU instance ${JSON.stringify(options.id)}: ${sentence}`);
    };
    if (!NAME.test(options.id)) bad('the id may hold letters, digits, ".", "_" and "-" only');
    if (!isAbsolute(options.baseDir)) bad(`baseDir ${options.baseDir} must be an absolute path`);
    this.dir = join(resolve(options.baseDir), options.id);
    this.workDir = resolve(options.workDir ?? join(this.dir, 'work'));
    for (const [what, path] of [
      ['instance directory', this.dir],
      ['working directory', this.workDir],
    ] as const) {
      if (!PLAIN_PATH.test(path)) bad(`the ${what} ${path} holds characters sshd_config cannot take unquoted (spaces, quotes, %)`);
    }
    if (options.authorizedKeys.length === 0) bad('at least one public key is needed: the instance allows no password logins');
    for (const key of options.authorizedKeys) {
      if (!KEY_LINE.test(key.trim())) bad(`"${key.slice(0, 40)}…" is not an OpenSSH public key line (type, base64 key, optional comment; no options)`);
    }
    for (const name of Object.keys(options.env ?? {})) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) bad(`environment variable name ${JSON.stringify(name)} is not a valid name`);
    }
    if (options.listenAddress !== undefined && !/^[0-9A-Za-z.:[\]-]+$/.test(options.listenAddress)) bad(`listenAddress ${options.listenAddress} is not an address`);
    if (options.port !== undefined && !(Number.isInteger(options.port) && options.port > 0 && options.port < 65536)) bad(`port ${options.port} is not a TCP port`);
  }

  /** The port sshd listens on; known once start() resolved or prepare() returned. */
  get port(): number {
    if (this.currentPort === undefined) throw new ProcessRuntimeError('FAILED_PRECONDITION', `GPU instance ${this.options.id} is not started`);
    return this.currentPort;
  }

  /** The host public key line, for the known_hosts entry users get; known once start() resolved or prepare() returned. */
  get hostPublicKey(): string {
    if (this.hostKey === undefined) throw new ProcessRuntimeError('FAILED_PRECONDITION', `GPU instance ${this.options.id} is not started`);
    return this.hostKey;
  }

  get supervisor(): SupervisedProcess | undefined {
    return this.process;
  }

  status(): ProcessStatus | undefined {
    return this.process?.status();
  }

  /** Writes the instance directory, starts sshd and resolves once its port accepts connections. */
  async start(): Promise<void> {
    if (this.process && this.process.state !== 'Stopped' && this.process.state !== 'Failed') {
      throw new ProcessRuntimeError('FAILED_PRECONDITION', `GPU instance ${this.options.id} is already ${this.process.state}`);
    }
    const sshd = this.options.sshdPath ?? requireSshd();
    const keygen = this.options.sshKeygenPath ?? requireOpenSshTool('ssh-keygen', 'openssh-client');
    this.writeFiles(keygen);
    const attempts = this.options.port === undefined ? 3 : 1;
    for (let attempt = 1; ; attempt++) {
      const port = this.options.port ?? (await freePort());
      this.writeConfig(port);
      checkConfig(sshd, this.configFile);
      const process = new SupervisedProcess(this.processSpec(sshd, port), this.options.supervisor);
      this.process = process;
      this.currentPort = port;
      process.start();
      const status = await process
        .waitFor((s) => s.state === 'Ready' || s.lastExit !== undefined, this.options.startTimeoutMs ?? 15_000, 'Ready')
        .catch(async (err: unknown) => {
          await process.stop(0);
          this.currentPort = undefined;
          throw err;
        });
      if (status.state === 'Ready') return;
      await process.stop(0);
      const log = this.logTail();
      if (attempt < attempts && BIND_FAILED.test(log)) continue; // the free port was taken meanwhile
      this.currentPort = undefined;
      throw new ProcessRuntimeError('UNAVAILABLE', `sshd of GPU instance ${this.options.id} did not start (${status.lastExit?.reason}): ${log}`);
    }
  }

  /**
   * Writes the instance directory and an sshd config for `port` (checked with `sshd -t`) and
   * returns the ProcessSpec that runs sshd, without starting it: for a runtime whose
   * ProcessTable supervises the sshd, so that after a runtime restart the running sshd is
   * re-adopted rather than started twice. The spec depends only on the options (directory, log
   * file) and the port, so the same port gives the same spec hash; the host key is generated once and
   * kept, so it survives runtime restarts too. Afterwards `port` and `hostPublicKey` are known;
   * the caller starts, stops and watches the process, and `stop()` removes the directory.
   */
  prepare(port: number): ProcessSpec {
    if (!(Number.isInteger(port) && port > 0 && port < 65536)) {
      throw new ProcessRuntimeError('INVALID_ARGUMENT', `GPU instance ${JSON.stringify(this.options.id)}: port ${port} is not a TCP port`);
    }
    if (this.process && this.process.state !== 'Stopped' && this.process.state !== 'Failed') {
      throw new ProcessRuntimeError('FAILED_PRECONDITION', `GPU instance ${this.options.id} is already ${this.process.state} under its own supervisor`);
    }
    const sshd = this.options.sshdPath ?? requireSshd();
    const keygen = this.options.sshKeygenPath ?? requireOpenSshTool('ssh-keygen', 'openssh-client');
    this.writeFiles(keygen);
    this.writeConfig(port);
    checkConfig(sshd, this.configFile);
    this.currentPort = port;
    return this.processSpec(sshd, port);
  }

  /** Stops sshd (SIGTERM; open sessions end with it) and removes the instance directory. */
  async stop(): Promise<void> {
    await this.process?.stop();
    this.currentPort = undefined;
    rmSync(this.dir, { recursive: true, force: true });
  }

  private get configFile(): string {
    return join(this.dir, 'sshd_config');
  }

  private get logFile(): string {
    return this.options.logFile ?? join(this.dir, 'sshd.log');
  }

  private processSpec(sshd: string, port: number): ProcessSpec {
    const spec: ProcessSpec = {
      id: `instance/${this.options.id}/sshd`,
      command: sshd,
      // -D: stay in the foreground (supervised); -e: log to stderr (the log file).
      args: ['-D', '-e', '-f', this.configFile],
      logFile: this.logFile,
      // Until ready only: sshd logs every probe connection (and sshd ≥ 9.8 penalizes its source).
      health: { probe: { kind: 'tcp', port, host: probeHost(this.options.listenAddress) }, intervalMs: 100, timeoutMs: 1_000, untilReady: true },
      restart: this.options.restart ?? 'always',
      stopGraceMs: this.options.stopGraceMs ?? 5_000,
    };
    if (this.options.backoff) spec.backoff = this.options.backoff;
    if (this.options.limits) spec.limits = this.options.limits;
    const sandbox = this.options.sandbox;
    if (sandbox) {
      const { user: _user, ...confine } = sandbox;
      spec.cwd = this.workDir;
      spec.sandbox = { ...confine, readOnly: [...(confine.readOnly ?? []), { source: this.dir }], writable: [this.workDir] };
    }
    return spec;
  }

  /**
   * Sandboxed, sshd runs as the pod's uid: it must read the config, keys and login script
   * (root-owned, not writable by it, in a directory only its sandbox shows), own its host key
   * (sshd refuses a private key others could read) and the login environment (it may hold
   * Secrets' values), and own the working directory.
   */
  private secure(path: string, mode: number, sandboxMode: number, owned = false): void {
    const sandbox = this.options.sandbox;
    chmodSync(path, sandbox ? sandboxMode : mode);
    if (sandbox && owned) chownSync(path, sandbox.uid, sandbox.gid);
  }

  private writeFiles(keygen: string): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    this.secure(this.dir, 0o700, 0o755);
    mkdirSync(this.workDir, { recursive: true, mode: 0o700 });
    this.secure(this.workDir, 0o700, 0o700, true);
    const hostKeyFile = join(this.dir, 'ssh_host_ed25519_key');
    if (!existsSync(hostKeyFile)) {
      execFileSync(keygen, ['-q', '-t', 'ed25519', '-N', '', '-C', `gpufleet-instance-${this.options.id}`, '-f', hostKeyFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    }
    this.secure(hostKeyFile, 0o600, 0o600, true);
    this.hostKey = readFileSync(`${hostKeyFile}.pub`, 'utf8').trim();
    for (const key of this.options.authorizedKeys) checkPublicKey(keygen, key.trim());
    writeFileSync(join(this.dir, 'authorized_keys'), this.options.authorizedKeys.map((k) => `${k.trim()}\n`).join(''), { mode: 0o600 });
    this.secure(join(this.dir, 'authorized_keys'), 0o600, 0o644);
    const env = Object.entries(this.options.env ?? {})
      .map(([name, value]) => `export ${name}=${shQuote(value)}\n`)
      .join('');
    writeFileSync(join(this.dir, 'environment'), `# gpufleet GPU instance ${this.options.id}: the login environment\n${env}`, { mode: 0o600 });
    this.secure(join(this.dir, 'environment'), 0o600, 0o600, true);
    writeFileSync(
      join(this.dir, 'login.sh'),
      [
        '#!/bin/sh',
        `# gpufleet GPU instance ${this.options.id}: sshd runs this for every session (ForceCommand).`,
        `. ${shQuote(join(this.dir, 'environment'))}`,
        `cd ${shQuote(this.workDir)} || exit 1`,
        'if [ -n "${SSH_ORIGINAL_COMMAND:-}" ]; then exec "${SHELL:-/bin/sh}" -c "$SSH_ORIGINAL_COMMAND"; fi',
        'exec "${SHELL:-/bin/sh}" -l',
        '',
      ].join('\n'),
      { mode: 0o700 },
    );
    this.secure(join(this.dir, 'login.sh'), 0o700, 0o755);
  }

  private writeConfig(port: number): void {
    const sandbox = this.options.sandbox;
    const user = sandbox ? { username: sandbox.user, uid: sandbox.uid } : userInfo();
    const root = user.uid === 0;
    const sftp = ['/usr/lib/openssh/sftp-server', '/usr/libexec/openssh/sftp-server', '/usr/libexec/sftp-server'].find((p) => existsSync(p));
    const lines = [
      `# gpufleet GPU instance ${this.options.id}: generated by the node runtime, rewritten at every start`,
      `Port ${port}`,
      `ListenAddress ${this.options.listenAddress ?? '127.0.0.1'}`,
      `HostKey ${join(this.dir, 'ssh_host_ed25519_key')}`,
      // Sandboxed, the instance directory is read-only to sshd; the supervisor knows its pid anyway.
      `PidFile ${sandbox ? 'none' : join(this.dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(this.dir, 'authorized_keys')}`,
      'AuthenticationMethods publickey',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'HostbasedAuthentication no',
      'PermitEmptyPasswords no',
      `PermitRootLogin ${root ? 'prohibit-password' : 'no'}`,
      `AllowUsers ${user.username}`,
      'UsePAM no',
      // StrictModes checks that no one else can write the key file or any directory above it;
      // a world-writable parent such as /tmp fails that even though the instance directory is 0700.
      `StrictModes ${strictModesPossible(this.dir, user.uid) ? 'yes' : 'no'}`,
      'PermitUserEnvironment no',
      'PermitUserRC no',
      'X11Forwarding no',
      'PermitTunnel no',
      'GatewayPorts no',
      'PrintMotd no',
      'PrintLastLog no',
      'UseDNS no',
      'MaxAuthTries 3',
      'LoginGraceTime 30',
      'ClientAliveInterval 60',
      `ForceCommand ${join(this.dir, 'login.sh')}`,
      ...(sftp ? [`Subsystem sftp ${sftp}`] : []),
      '',
    ];
    writeFileSync(this.configFile, lines.join('\n'), { mode: 0o600 });
    this.secure(this.configFile, 0o600, 0o644);
  }

  private logTail(): string {
    try {
      return readFileSync(this.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '' && !l.startsWith('[gpufleet]'))
        .slice(-5)
        .join(' | ');
    } catch {
      return '(no log)';
    }
  }
}

/** The path of sshd, or an error that says how to install it. */
export function requireSshd(): string {
  return requireOpenSshTool('sshd', 'openssh-server');
}

function requireOpenSshTool(name: string, pkg: string): string {
  try {
    return requireBinary(name);
  } catch {
    const bootstrap = name === 'sshd' ? ' (or: bash tools/scripts/bootstrap.sh sshd)' : '';
    throw new ProcessRuntimeError('FAILED_PRECONDITION', `${name} is not installed; install it with: apt-get install -y ${pkg}${bootstrap}`);
  }
}

/** `sshd -t`: a config error stops start() with sshd's own words. Creates the privilege separation directory root's sshd needs. */
function checkConfig(sshd: string, config: string): void {
  for (let attempt = 0; ; attempt++) {
    try {
      execFileSync(sshd, ['-t', '-f', config], { stdio: ['ignore', 'pipe', 'pipe'] });
      return;
    } catch (err) {
      const output = `${(err as { stderr?: Buffer }).stderr?.toString() ?? ''}${(err as { stdout?: Buffer }).stdout?.toString() ?? ''}`.trim();
      // Debian's sshd, started as root, wants /run/sshd (normally made by the system service) even
      // when it has a config of its own. An empty root-owned directory: creating it is harmless.
      const privsep = /Missing privilege separation directory: (\S+)/.exec(output);
      if (privsep && attempt === 0 && userInfo().uid === 0) {
        mkdirSync(privsep[1], { recursive: true, mode: 0o755 });
        continue;
      }
      throw new ProcessRuntimeError('FAILED_PRECONDITION', `sshd refused the instance config ${config}: ${output || (err as Error).message}`);
    }
  }
}

/** `ssh-keygen -l` parses the key: a line that merely looks like a key is not enough. */
function checkPublicKey(keygen: string, key: string): void {
  try {
    execFileSync(keygen, ['-l', '-f', '-'], { input: `${key}\n`, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch {
    throw new ProcessRuntimeError('INVALID_ARGUMENT', `"${key.slice(0, 40)}…" is not a valid OpenSSH public key (ssh-keygen cannot read it)`);
  }
}

/**
 * True when every directory from `path` up to / is owned by root or `uid` and writable by no
 * one else: what sshd's StrictModes demands of the directories above the authorized keys.
 */
export function strictModesPossible(path: string, uid: number, stat: (p: string) => Pick<Stats, 'uid' | 'mode'> = statSync): boolean {
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    let st: Pick<Stats, 'uid' | 'mode'>;
    try {
      st = stat(dir);
    } catch {
      return false;
    }
    if ((st.uid !== 0 && st.uid !== uid) || (st.mode & 0o022) !== 0) return false;
    if (dir === '/') return true;
  }
}

function probeHost(listenAddress: string | undefined): string {
  if (!listenAddress || listenAddress === '0.0.0.0') return '127.0.0.1';
  if (listenAddress === '::') return '::1';
  return listenAddress.replace(/^\[(.*)\]$/, '$1');
}

function shQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

import { execFileSync } from 'child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'fs';
import { constants } from 'os';
import { dirname, join } from 'path';
import { requireBinary } from '@gpufleet/process-kit';
import type { ProcessSpec, SandboxBind } from '@gpufleet/process-spec';

/** Where the sandbox's tools are on the host; found once by `detectSandbox`. */
export interface SandboxTools {
  readonly bwrap: string;
  readonly setpriv: string;
}

/** What this host can do, found once at runtime start. */
export type SandboxSupport = { readonly supported: true; readonly tools: SandboxTools; readonly detail: string } | { readonly supported: false; readonly reason: string };

/** Directories bwrap mounts an empty tmpfs on in every sandbox (besides `hidden`). */
const PRIVATE_TMPFS = ['/tmp', '/var/tmp'];

/**
 * The `bwrap` command line that runs `spec` confined by `spec.sandbox`:
 *
 * - PID, IPC and UTS namespaces of its own (`--unshare-pid` etc.): other pods and the runtime
 *   are not in its /proc; its /proc is a new one (`--proc`).
 * - The host's file system read-only (`--ro-bind / /`), with a minimal /dev (`--dev`: null,
 *   zero, random, tty, pts) to which only the listed device nodes are added, an empty
 *   /tmp, /var/tmp and /dev/shm, the `hidden` directories emptied (tmpfs), `readOnly` bound back in, and
 *   only `writable` bound read-write.
 * - Its own uid and gid, no supplementary groups, no capabilities, no_new_privs: `setpriv`
 *   inside the sandbox, after bwrap (as root) built the mounts.
 *
 * Not `--die-with-parent`: pods outlive the runtime so that the next one adopts them. Not
 * `--clearenv`/`--setenv`: bwrap passes on the environment it was started with, which the
 * supervisor already scrubbed (`sandboxEnv`); values given with `--setenv` would sit in the
 * world-readable /proc/<pid>/cmdline and the state file.
 */
export function bwrapCommand(spec: ProcessSpec, tools: SandboxTools, host: SandboxHostView = localHostView): { command: string; args: string[] } {
  const sandbox = spec.sandbox;
  if (!sandbox) return { command: spec.command, args: [...(spec.args ?? [])] };
  const args = ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
  const roots = ['/dev'];
  const made = new Set<string>();
  /** Parent directories of `target` that live on a tmpfs mounted here: bwrap would make them 0700 root, unreachable for the pod. */
  const parents = (target: string): void => {
    const chain: string[] = [];
    for (let d = dirname(target); d !== '/' && !roots.includes(d); d = dirname(d)) chain.unshift(d);
    const root = roots.find((r) => target.startsWith(`${r}/`));
    if (!root) return;
    for (const d of chain) {
      if (!d.startsWith(`${root}/`) || made.has(d)) continue;
      made.add(d);
      args.push('--perms', '0755', '--dir', d);
    }
  };
  const hiddenRoots = [...PRIVATE_TMPFS.filter((p) => host.exists(p)), ...sandbox.hidden];
  const bound = [...sandbox.writable, ...(sandbox.readOnly ?? []).map((b) => b.target ?? b.source)];
  // The working directory (an engine's: the checkout or install it runs from) stays readable
  // even when it lives under /tmp, /var/tmp or a directory other users cannot enter (a clone in
  // /tmp, a checkout in /root): bound back read-only in its place among the tmpfs mounts, so a
  // hidden directory inside it is still hidden. Not needed when it is bound anyway.
  const within = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);
  const cwd = spec.cwd && spec.cwd !== '/' && !bound.some((b) => within(spec.cwd!, b)) && !sandbox.hidden.includes(spec.cwd) ? [spec.cwd] : [];
  const targets = [...sandbox.hidden, ...bound, ...cwd];
  const mounts: Array<{ path: string; perms?: string }> = [
    ...PRIVATE_TMPFS.filter((p) => host.exists(p)).map((p) => ({ path: p, perms: '1777' })),
    // --dev makes /dev/shm a root-owned directory; POSIX shared memory (PyTorch, NCCL, vLLM's
    // workers) needs a writable one, and a private one keeps it from other pods.
    { path: '/dev/shm', perms: '1777' },
    ...sandbox.hidden.map((p) => ({ path: p, perms: '0755' })),
    ...closedAncestors(targets, hiddenRoots, host).map((p) => ({ path: p, perms: '0755' })),
    // No perms: a read-only bind of the working directory, not a tmpfs.
    ...cwd.map((p) => ({ path: p })),
  ].sort((a, b) => a.path.length - b.path.length);
  for (const { path, perms } of mounts) {
    parents(path);
    if (perms === undefined) {
      args.push('--ro-bind', path, path);
      continue;
    }
    args.push('--perms', perms, '--tmpfs', path);
    roots.push(path);
  }
  for (const path of sandbox.readOnly ?? []) {
    const target = path.target ?? path.source;
    parents(target);
    args.push('--ro-bind', path.source, target);
  }
  for (const dir of sandbox.writable) {
    parents(dir);
    args.push('--bind', dir, dir);
  }
  for (const device of sandbox.devices) {
    const target = device.target ?? device.source;
    parents(target);
    args.push('--dev-bind-try', device.source, target);
  }
  if (spec.cwd) args.push('--chdir', spec.cwd);
  args.push(
    '--',
    tools.setpriv,
    `--reuid=${sandbox.uid}`,
    `--regid=${sandbox.gid}`,
    '--clear-groups',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
    spec.command,
    ...(spec.args ?? []),
  );
  return { command: tools.bwrap, args };
}

/** What bwrapCommand asks of the host's file system (a spec replaces it). */
export interface SandboxHostView {
  exists(path: string): boolean;
  /** Permission bits, or undefined when the path does not exist. */
  mode(path: string): number | undefined;
}

const localHostView: SandboxHostView = {
  exists: existsSync,
  mode: (path) => {
    try {
      return statSync(path).mode;
    } catch {
      return undefined;
    }
  },
};

/**
 * Ancestors of `targets` that other users cannot enter on the host (no o+x: root's home, a
 * 0700 stack home), outside every tmpfs already mounted: the pod's uid could not reach its own
 * directories through them. Each gets an empty tmpfs, then bwrap creates the path down to the
 * target: the pod sees nothing of them it could have seen before.
 */
function closedAncestors(targets: readonly string[], roots: readonly string[], host: SandboxHostView): string[] {
  const closed = new Set<string>();
  const under = (path: string, list: Iterable<string>): boolean => [...list].some((r) => path === r || path.startsWith(`${r}/`));
  for (const target of targets) {
    const parts = target.split('/').filter(Boolean);
    for (let i = 1; i < parts.length; i++) {
      const dir = `/${parts.slice(0, i).join('/')}`;
      if (under(dir, roots) || under(dir, closed)) break;
      const mode = host.mode(dir);
      if (mode !== undefined && (mode & 0o001) === 0) {
        closed.add(dir);
        break;
      }
    }
  }
  return [...closed];
}

/**
 * The whole environment of a sandboxed process: the spec's, plus PATH (the runtime's, so the
 * same binaries are found) when the spec has none. Nothing else of the runtime's passes in.
 */
export function sandboxEnv(env: Readonly<Record<string, string>> | undefined, base: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return { PATH: base.PATH ?? '/usr/local/bin:/usr/bin:/bin', ...env };
}

/**
 * bwrap's init exits 128+N when the command was killed by signal N: the signal, so that a
 * sandboxed pod killed by SIGKILL is reported as such.
 */
export function sandboxExit(code: number | null, signal: NodeJS.Signals | null): { code: number | null; signal: NodeJS.Signals | null } {
  if (signal || code === null || code <= 128 || code > 128 + 64) return { code, signal };
  const name = Object.entries(constants.signals).find(([, n]) => n === code - 128)?.[0] as NodeJS.Signals | undefined;
  return name ? { code: null, signal: name } : { code, signal };
}

/**
 * Can this host sandbox pods? Needs root (pods get uids of their own, mounts are built before
 * the uid changes), bwrap and setpriv, and a kernel and container that allow new PID and mount
 * namespaces: checked by running one sandbox.
 */
export function detectSandbox(options: { uid?: number; findBinary?: (name: string) => string } = {}): SandboxSupport {
  const uid = options.uid ?? process.getuid?.() ?? -1;
  if (uid !== 0) return { supported: false, reason: `the runtime runs as uid ${uid}, not root: it cannot give each pod a uid of its own` };
  const find = options.findBinary ?? requireBinary;
  let tools: SandboxTools;
  try {
    tools = { bwrap: find('bwrap'), setpriv: find('setpriv') };
  } catch (err) {
    return { supported: false, reason: `${(err as Error).message} (bwrap: apt-get install -y bubblewrap, or bash tools/scripts/bootstrap.sh bwrap; setpriv: util-linux)` };
  }
  const probe = bwrapCommand({ id: 'sandbox-probe', command: '/bin/true', cwd: '/', sandbox: { uid: 65534, gid: 65534, writable: [], hidden: [], devices: [] } }, tools);
  try {
    execFileSync(probe.command, probe.args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000, env: { PATH: '/usr/bin:/bin' } });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    return { supported: false, reason: `bwrap cannot create a sandbox here: ${stderr || (err as Error).message}` };
  }
  return { supported: true, tools, detail: `bwrap ${bwrapVersion(tools.bwrap)}, pods run as their own uid` };
}

function bwrapVersion(bwrap: string): string {
  try {
    return execFileSync(bwrap, ['--version'], { encoding: 'utf8' }).trim().replace(/^bubblewrap\s*/, '');
  } catch {
    return '(version unknown)';
  }
}

/**
 * A passwd and a group file for the sandbox: the host's, plus the pod's own user, so that
 * `id`, `getpwuid()` and sshd (which refuses a uid without a name) know it. Written into `dir`
 * (the runtime's, not writable by the pod); returns the binds over /etc/passwd and /etc/group.
 */
export function writeSandboxIdentity(dir: string, user: { name: string; uid: number; gid: number; home: string }, etc = '/etc'): SandboxBind[] {
  const read = (file: string): string => {
    try {
      const text = readFileSync(join(etc, file), 'utf8');
      return text.endsWith('\n') || text === '' ? text : `${text}\n`;
    } catch {
      return '';
    }
  };
  const keep = (text: string, id: number): string =>
    text
      .split('\n')
      .filter((line) => line !== '' && line.split(':')[2] !== String(id) && line.split(':')[0] !== user.name)
      .map((line) => `${line}\n`)
      .join('');
  // "x": the password is in a shadow file the pod cannot read; not locked ("!"), which sshd
  // without PAM would refuse.
  writeFileSync(join(dir, 'passwd'), `${keep(read('passwd'), user.uid)}${user.name}:x:${user.uid}:${user.gid}:gpufleet pod:${user.home}:/bin/sh\n`, { mode: 0o644 });
  writeFileSync(join(dir, 'group'), `${keep(read('group'), user.gid)}${user.name}:x:${user.gid}:\n`, { mode: 0o644 });
  return [
    { source: join(dir, 'passwd'), target: '/etc/passwd' },
    { source: join(dir, 'group'), target: '/etc/group' },
  ];
}

import { isAbsolute } from 'path';

/** A host path bound into a sandbox at `target` (default: the same path). */
export interface SandboxBind {
  readonly source: string;
  readonly target?: string;
}

/**
 * How a pod's process is confined (bubblewrap namespaces plus an unprivileged uid), as data: the
 * process runtime turns it into a `bwrap` command line. The system is visible read-only; what
 * the pod may write, the device nodes it gets and the directories hidden from it are listed here.
 */
export interface ProcessSandbox {
  /** The pod's own uid and gid: from the range the runtime owns, never 0. */
  readonly uid: number;
  readonly gid: number;
  /** Host directories the pod writes, bound read-write at the same path (its state and working directories). */
  readonly writable: readonly string[];
  /** Directories replaced by an empty tmpfs before `writable` is bound: the runtime's state (other pods' files). */
  readonly hidden: readonly string[];
  /** Device nodes bound in; a source that does not exist is skipped. Nothing else of /dev but null, zero, random, tty, pts, shm. */
  readonly devices: readonly SandboxBind[];
  /**
   * Host paths bound read-only, before `writable` (so a writable directory may sit inside one):
   * a passwd naming the pod's uid (sshd needs one), an instance's sshd files.
   */
  readonly readOnly?: readonly SandboxBind[];
}

/** Lowest uid a sandbox may use: below are system and human accounts. */
export const MIN_SANDBOX_UID = 1_000;

/** Refuses a sandbox that would not confine the process as meant; `bad` names the field. */
export function checkSandbox(sandbox: ProcessSandbox, bad: (sentence: string) => never): void {
  for (const [name, id] of [
    ['uid', sandbox.uid],
    ['gid', sandbox.gid],
  ] as const) {
    if (!Number.isInteger(id) || id < MIN_SANDBOX_UID || id > 0xfffffffe) bad(`sandbox.${name} must be an integer from ${MIN_SANDBOX_UID} (an unprivileged id), got ${id}`);
  }
  const path = (field: string, p: string | undefined): void => {
    if (p !== undefined && (!isAbsolute(p) || p.includes('\0') || p.split('/').includes('..'))) bad(`sandbox.${field} ${JSON.stringify(p)} must be an absolute path without ".."`);
  };
  for (const p of sandbox.writable) path('writable', p);
  for (const p of sandbox.hidden) {
    path('hidden', p);
    if (p === '/') bad('sandbox.hidden cannot hide /');
  }
  for (const d of [...sandbox.devices, ...(sandbox.readOnly ?? [])]) {
    path('devices/readOnly source', d.source);
    path('devices/readOnly target', d.target);
  }
}

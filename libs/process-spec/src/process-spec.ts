import { createHash } from 'crypto';
import { isAbsolute } from 'path';
import { ProcessRuntimeError } from './errors';
import { checkSandbox, type ProcessSandbox } from './sandbox-spec';

/** How the runtime asks a process whether it is ready: an HTTP GET or a TCP connect. */
export type HealthProbe = { kind: 'http'; url: string } | { kind: 'tcp'; port: number; host?: string };

/** When the runtime rotates a process's log file (copy to `<file>.1`, truncate in place). */
export interface LogRotation {
  /** Rotate once the file is larger than this. Default 10 MiB. */
  maxBytes?: number;
  /** Rotated files kept: `<file>.1` (newest) … `<file>.<keep>`. Default 3. */
  keep?: number;
}

/** When a process that exited is started again. `on-failure`: unless it exited with code 0. */
export type RestartPolicy = 'always' | 'on-failure' | 'never';

export interface HealthCheck {
  probe: HealthProbe;
  /** Between probes. Default 1000 ms. */
  intervalMs?: number;
  /** Per probe. Default 1000 ms. */
  timeoutMs?: number;
  /** Consecutive failed probes that take a Ready process back to Running (not ready). Default 3. */
  failureThreshold?: number;
  /**
   * Consecutive failed probes, after the process was Ready once, that make the runtime restart
   * it (a liveness check). Default: never; a hung engine is then only reported, not restarted.
   */
  restartAfterFailures?: number;
  /**
   * Probe only until the first success; afterwards the process counts as ready for as long as it
   * runs. For servers that log (or, like newer sshd, penalize) every connection that does not
   * log in.
   */
  untilReady?: boolean;
}

/** Exponential backoff between restarts: base, 2×base, 4×base, … capped. */
export interface BackoffPolicy {
  /** Delay before the first restart. Default 1000 ms. */
  baseMs?: number;
  /** Longest delay. Default 300000 ms (5 min). */
  capMs?: number;
  /** A process that ran this long before exiting counts as healthy: the backoff starts over. Default 600000 ms (10 min). */
  resetAfterMs?: number;
}

/** One process the runtime runs: an engine, an instance's sshd, a side process. */
export interface ProcessSpec {
  /** Unique on the node, e.g. "<workload>/<pod>" or "instance/<name>/sshd". */
  id: string;
  /** Absolute path, or a name looked up on PATH. */
  command: string;
  args?: readonly string[];
  /** Added to the runtime's base environment (which never carries device visibility variables). */
  env?: Readonly<Record<string, string>>;
  cwd?: string;
  /** stdout and stderr, appended; the runtime adds its own `[gpufleet]` lines. */
  logFile?: string;
  logRotation?: LogRotation;
  health?: HealthCheck;
  /** Default `on-failure`. */
  restart?: RestartPolicy;
  backoff?: BackoffPolicy;
  /** SIGTERM, then SIGKILL to the whole process group after this long. Default 30000 ms. */
  stopGraceMs?: number;
  /**
   * Run confined (bubblewrap, its own uid). The environment is then exactly `env` (plus PATH
   * when `env` has none): nothing of the runtime's own passes in.
   */
  sandbox?: ProcessSandbox;
  /** cgroup limits (a cgroup of its own, v2 or v1): what the pod requested. */
  limits?: ResourceLimits;
}

/** What a process and everything it starts may use; absent fields are not limited. */
export interface ResourceLimits {
  /** Memory, bytes: more and the kernel's OOM killer ends it (reported `OOMKilled`). */
  memoryBytes?: number;
  /** CPU time, thousandths of a CPU (1000 = one CPU): a CFS quota per 100 ms period. */
  cpuMillis?: number;
  /** Processes and threads at once. */
  pids?: number;
}

export const DEFAULT_BACKOFF_BASE_MS = 1_000;
export const DEFAULT_BACKOFF_CAP_MS = 5 * 60_000;
export const DEFAULT_BACKOFF_RESET_MS = 10 * 60_000;
export const DEFAULT_STOP_GRACE_MS = 30_000;

/** The delay before restart number `failures` (1-based) in a row. */
export function backoffDelay(failures: number, baseMs = DEFAULT_BACKOFF_BASE_MS, capMs = DEFAULT_BACKOFF_CAP_MS): number {
  const exponent = Math.max(0, failures - 1);
  return Math.min(capMs, baseMs * 2 ** Math.min(exponent, 52));
}

/** Refuses a spec the runtime could not run as meant, naming the field. */
export function checkProcessSpec(spec: ProcessSpec): void {
  const bad = (sentence: string): never => {
    throw new ProcessRuntimeError('INVALID_ARGUMENT', `process ${JSON.stringify(spec.id)}: ${sentence}`);
  };
  if (!spec.id || /[\0\n]/.test(spec.id)) bad('id must be a non-empty single line');
  if (!spec.command) bad('command is empty');
  for (const [name, value] of Object.entries(spec.env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) bad(`environment variable name ${JSON.stringify(name)} is not a valid name`);
    if (value.includes('\0')) bad(`environment variable ${name} contains a NUL byte`);
  }
  if (spec.cwd !== undefined && !isAbsolute(spec.cwd)) bad(`cwd ${JSON.stringify(spec.cwd)} must be an absolute path`);
  if (spec.logFile !== undefined && !isAbsolute(spec.logFile)) bad(`logFile ${JSON.stringify(spec.logFile)} must be an absolute path`);
  const positive = (name: string, value: number | undefined): void => {
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) bad(`${name} must be a positive number, got ${value}`);
  };
  positive('backoff.baseMs', spec.backoff?.baseMs);
  positive('backoff.capMs', spec.backoff?.capMs);
  positive('backoff.resetAfterMs', spec.backoff?.resetAfterMs);
  positive('health.intervalMs', spec.health?.intervalMs);
  positive('health.timeoutMs', spec.health?.timeoutMs);
  positive('health.failureThreshold', spec.health?.failureThreshold);
  positive('health.restartAfterFailures', spec.health?.restartAfterFailures);
  positive('logRotation.maxBytes', spec.logRotation?.maxBytes);
  if (spec.stopGraceMs !== undefined && !(spec.stopGraceMs >= 0)) bad(`stopGraceMs must be zero or more, got ${spec.stopGraceMs}`);
  for (const [name, value] of Object.entries(spec.limits ?? {})) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) bad(`limits.${name} must be a positive integer, got ${value}`);
  }
  if (spec.sandbox) {
    checkSandbox(spec.sandbox, bad);
    if (spec.cwd === undefined) bad('a sandboxed process needs a cwd (the system is read-only; the runtime\'s own directory is not the pod\'s)');
  }
}

/**
 * A digest of what the process was launched with: command, arguments, environment, working
 * directory, log file, sandbox and limits. A change there needs a new process; a change of probe, restart
 * policy, backoff or grace period does not (an adopted process is supervised with the new ones).
 */
export function specHash(spec: ProcessSpec): string {
  const env = Object.fromEntries(Object.entries(spec.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  // The sandbox joins the digest only when there is one, so unsandboxed specs hash as before
  // (a runtime upgraded in place adopts what its predecessor started).
  const launch = { command: spec.command, args: spec.args ?? [], env, cwd: spec.cwd ?? null, logFile: spec.logFile ?? null, ...(spec.sandbox ? { sandbox: spec.sandbox } : {}), ...(spec.limits ? { limits: spec.limits } : {}) };
  return `sha256:${createHash('sha256').update(JSON.stringify(launch)).digest('hex')}`;
}

/** How a process ended. An adopted process is not our child: its exit status is unknown. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** It never ran: "spawn /opt/vllm ENOENT". */
  error?: string;
  /** Not our child: it vanished and nobody told us why. */
  statusUnknown?: boolean;
  /** The kernel's OOM killer killed a process of its cgroup: it hit its memory limit. */
  oomKilled?: boolean;
}

/**
 * - `Starting`: being spawned.
 * - `Running`: alive, not (yet) passing its health probe.
 * - `Ready`: alive and passing its probe (or alive, when it has none).
 * - `Backoff`: exited; waits out the backoff delay before the next start.
 * - `Stopping`: SIGTERM sent to its process group; SIGKILL follows after the grace period.
 * - `Stopped`: stopped on request, or exited with code 0 where the policy does not restart.
 * - `Failed`: exited unsuccessfully where the policy does not restart.
 */
export type ProcessState = 'Starting' | 'Running' | 'Ready' | 'Backoff' | 'Stopping' | 'Stopped' | 'Failed';

export interface LastExit extends ExitInfo {
  pid?: number;
  /** ms since the epoch */
  at: number;
  /** How long it ran, ms. */
  ranMs: number;
  /** e.g. "exited with code 1", "killed by SIGKILL", "could not start: spawn /x ENOENT". */
  reason: string;
}

export interface ProcessStatus {
  id: string;
  state: ProcessState;
  pid?: number;
  /** `/proc/<pid>/stat` start time (clock ticks since boot). */
  startTime?: number;
  /** When this runtime started (or adopted) it, ms since the epoch. */
  startedAt?: number;
  /** Starts after the first. */
  restarts: number;
  /** Failures in a row, which set the backoff delay. */
  consecutiveFailures: number;
  lastExit?: LastExit;
  /** While in Backoff, ms since the epoch. */
  nextRestartAt?: number;
  /** Started by an earlier runtime and re-adopted; exit codes of such a process are unknown. */
  adopted: boolean;
  /** Outcome of the last probes; undefined before the first or without a probe. */
  healthy?: boolean;
}

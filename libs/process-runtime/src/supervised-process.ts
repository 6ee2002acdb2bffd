import {
  backoffDelay,
  checkProcessSpec,
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
  DEFAULT_BACKOFF_RESET_MS,
  DEFAULT_STOP_GRACE_MS,
  DEVICE_VISIBILITY_VARS,
  ProcessRuntimeError,
  type ExitInfo,
  type LastExit,
  type ProcessSpec,
  type ProcessState,
  type ProcessStatus,
} from '@gpufleet/process-spec';
import { systemClock, type Clock, type TimerHandle } from './clock';
import { describeProbe, probeHealth, type ProbeFn } from './health-probe';
import { appendLogLine, rotateLogIfNeeded } from './log-file';
import { LocalProcessHost, type HostProcess, type ProcessHost } from './process-host';
import { sandboxEnv } from './sandbox';

const ACTIVE: readonly ProcessState[] = ['Starting', 'Running', 'Ready', 'Backoff', 'Stopping'];

/** Events in the order they happen; `exited` comes before the state change that follows an exit. */
export type ProcessEvent =
  | { type: 'state'; id: string; at: number; state: ProcessState; previous: ProcessState }
  | { type: 'started'; id: string; at: number; pid: number; startTime?: number; restarts: number; adopted: boolean }
  | { type: 'exited'; id: string; at: number; exit: LastExit }
  | { type: 'backoff'; id: string; at: number; delayMs: number; failures: number }
  | { type: 'health'; id: string; at: number; healthy: boolean; detail: string }
  | { type: 'log-rotated'; id: string; at: number; file: string };

export type ProcessListener = (event: ProcessEvent) => void;

export interface SupervisorOptions {
  clock?: Clock;
  host?: ProcessHost;
  probe?: ProbeFn;
  /**
   * What every process's environment starts from, before its spec's `env`. Default: the
   * runtime's own environment without any device visibility variable.
   */
  baseEnv?: NodeJS.ProcessEnv;
  /** How often an adopted process (not our child) is checked for life. Default 1000 ms. */
  adoptedPollMs?: number;
  /** How often the log file's size is checked for rotation. Default 10000 ms. */
  logCheckIntervalMs?: number;
}

/**
 * Runs one process and keeps it running per its restart policy: exponential backoff between
 * restarts (capped, 5 min by default), health probing, log capture, and a stop that sends
 * SIGTERM to the whole process group and SIGKILL after the grace period. Framework-free; the
 * node runtime drives many of these and reports their events.
 */
export class SupervisedProcess {
  private currentState: ProcessState = 'Stopped';
  private current: HostProcess | undefined;
  private generation = 0;
  private restarts = 0;
  private consecutiveFailures = 0;
  private startedAt: number | undefined;
  private lastExit: LastExit | undefined;
  private adopted = false;
  private detached = false;
  private healthy: boolean | undefined;
  private everReady = false;
  private probeFailures = 0;
  private restartingUnhealthy = false;
  private stopRequested = false;
  private stopDeadline = 0;
  private nextRestartAt: number | undefined;
  private readonly timers = new Map<'backoff' | 'probe' | 'log' | 'kill' | 'group', TimerHandle>();
  private readonly stopWaiters: Array<() => void> = [];
  private readonly listeners = new Set<ProcessListener>();
  private readonly clock: Clock;
  private readonly host: ProcessHost;
  private readonly probe: ProbeFn;
  private readonly env: Record<string, string>;
  private readonly adoptedPollMs: number;
  private readonly logCheckIntervalMs: number;

  constructor(
    readonly spec: ProcessSpec,
    options: SupervisorOptions = {},
  ) {
    checkProcessSpec(spec);
    this.clock = options.clock ?? systemClock;
    this.host = options.host ?? new LocalProcessHost();
    this.probe = options.probe ?? probeHealth;
    this.adoptedPollMs = options.adoptedPollMs ?? 1_000;
    this.logCheckIntervalMs = options.logCheckIntervalMs ?? 10_000;
    const base: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.baseEnv ?? process.env)) {
      if (value !== undefined && (options.baseEnv !== undefined || !DEVICE_VISIBILITY_VARS.includes(name))) base[name] = value;
    }
    // A sandboxed process gets exactly its spec's environment: nothing of the runtime's.
    this.env = spec.sandbox ? sandboxEnv(spec.env, options.baseEnv ?? process.env) : { ...base, ...spec.env };
  }

  get id(): string {
    return this.spec.id;
  }

  get state(): ProcessState {
    return this.currentState;
  }

  /** Subscribes to events; returns the unsubscribe function. */
  on(listener: ProcessListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  status(): ProcessStatus {
    const s: ProcessStatus = {
      id: this.spec.id,
      state: this.currentState,
      restarts: this.restarts,
      consecutiveFailures: this.consecutiveFailures,
      adopted: this.adopted,
    };
    if (this.current) {
      s.pid = this.current.pid;
      if (this.current.startTime !== undefined) s.startTime = this.current.startTime;
      if (this.startedAt !== undefined) s.startedAt = this.startedAt;
    }
    if (this.lastExit) s.lastExit = this.lastExit;
    if (this.nextRestartAt !== undefined) s.nextRestartAt = this.nextRestartAt;
    if (this.healthy !== undefined) s.healthy = this.healthy;
    return s;
  }

  /** Starts the process. Refused while it is already active. */
  start(): void {
    this.checkIdle('start');
    this.consecutiveFailures = 0;
    void this.launch();
  }

  /**
   * Supervises a process an earlier runtime started (same pid and start time, checked by the
   * caller): no new process is started. It is polled for life, probed, stopped like any other,
   * and restarted as our own child if it exits.
   */
  adopt(pid: number, startTime: number): void {
    this.checkIdle('adopt');
    this.consecutiveFailures = 0;
    const gen = ++this.generation;
    const proc = this.host.attach(pid, startTime, this.adoptedPollMs);
    this.current = proc;
    this.adopted = true;
    this.startedAt = this.clock.now();
    this.log(`re-adopted pid ${pid} after a runtime restart`);
    this.emit({ type: 'started', id: this.id, at: this.clock.now(), pid, startTime, restarts: this.restarts, adopted: true });
    this.afterStart(gen, proc);
  }

  /**
   * Stops it: SIGTERM to its process group, SIGKILL to the group after `graceMs` (default the
   * spec's `stopGraceMs`). Resolves once the process and its group are gone. A process waiting
   * in Backoff is simply not restarted.
   */
  stop(graceMs = this.spec.stopGraceMs ?? DEFAULT_STOP_GRACE_MS): Promise<void> {
    if (this.detached || this.currentState === 'Stopped' || this.currentState === 'Failed') return Promise.resolve();
    if (this.currentState === 'Backoff') {
      this.clearTimer('backoff');
      this.nextRestartAt = undefined;
      this.log('stopped while waiting to restart');
      this.setState('Stopped');
      return Promise.resolve();
    }
    const done = new Promise<void>((resolve) => this.stopWaiters.push(resolve));
    if (!this.stopRequested) {
      this.stopRequested = true;
      this.stopDeadline = this.clock.now() + graceMs;
      // While Starting, afterStart() terminates it as soon as the spawn completes.
      if (this.current && this.currentState !== 'Starting') {
        this.setState('Stopping');
        this.terminate(this.current, graceMs);
      }
    }
    return done;
  }

  /**
   * Stops supervising without touching the process: it keeps running, for the next runtime to
   * adopt from the state file. The object is inert afterwards.
   */
  detach(): void {
    this.detached = true;
    for (const key of [...this.timers.keys()]) this.clearTimer(key);
    this.current?.release();
    for (const resolve of this.stopWaiters.splice(0)) resolve();
  }

  /** Resolves with the status once `accept` holds (checked now and on every event). */
  waitFor(accept: (status: ProcessStatus) => boolean, timeoutMs = 30_000, what = 'the expected state'): Promise<ProcessStatus> {
    return new Promise((resolve, reject) => {
      if (accept(this.status())) return resolve(this.status());
      const timer = this.clock.setTimeout(() => {
        off();
        const s = this.status();
        reject(
          new ProcessRuntimeError(
            'DEADLINE_EXCEEDED',
            `process ${this.id} did not reach ${what} within ${timeoutMs} ms (state ${s.state}${s.lastExit ? `, last exit: ${s.lastExit.reason}` : ''})`,
          ),
        );
      }, timeoutMs);
      const off = this.on(() => {
        if (!accept(this.status())) return;
        off();
        this.clock.clearTimeout(timer);
        resolve(this.status());
      });
    });
  }

  /** Resolves once the state is one of `states`. */
  waitForState(states: ProcessState | readonly ProcessState[], timeoutMs = 30_000): Promise<ProcessStatus> {
    const wanted: readonly ProcessState[] = typeof states === 'string' ? [states] : states;
    return this.waitFor((s) => wanted.includes(s.state), timeoutMs, wanted.join(' or '));
  }

  private checkIdle(what: string): void {
    if (this.detached) throw new ProcessRuntimeError('FAILED_PRECONDITION', `process ${this.id} is detached; create a new supervisor to ${what} it`);
    if (ACTIVE.includes(this.currentState)) {
      throw new ProcessRuntimeError('FAILED_PRECONDITION', `process ${this.id} is already ${this.currentState}; stop it before you ${what} it again`);
    }
    this.stopRequested = false;
    this.restartingUnhealthy = false;
  }

  private async launch(): Promise<void> {
    const gen = ++this.generation;
    this.adopted = false;
    this.setState('Starting');
    if (this.spec.logFile && rotateLogIfNeeded(this.spec.logFile, this.spec.logRotation)) {
      this.emit({ type: 'log-rotated', id: this.id, at: this.clock.now(), file: this.spec.logFile });
    }
    this.log(`starting${this.restarts > 0 ? ` (restart ${this.restarts})` : ''}: ${[this.spec.command, ...(this.spec.args ?? [])].join(' ')}`);
    let proc: HostProcess;
    try {
      proc = await this.host.spawn(this.spec, this.env);
    } catch (err) {
      if (gen !== this.generation || this.detached) return;
      this.onExit(gen, undefined, { code: null, signal: null, error: errorMessage(err) });
      return;
    }
    if (gen !== this.generation || this.detached) {
      proc.release();
      return;
    }
    this.current = proc;
    this.startedAt = this.clock.now();
    this.log(`started pid ${proc.pid}`);
    this.emit({ type: 'started', id: this.id, at: this.clock.now(), pid: proc.pid, startTime: proc.startTime, restarts: this.restarts, adopted: false });
    this.afterStart(gen, proc);
  }

  private afterStart(gen: number, proc: HostProcess): void {
    this.healthy = undefined;
    this.everReady = false;
    this.probeFailures = 0;
    void proc.exited.then((exit) => this.onExit(gen, proc, exit));
    if (this.stopRequested) {
      this.setState('Stopping');
      this.terminate(proc, Math.max(0, this.stopDeadline - this.clock.now()));
      return;
    }
    if (this.spec.health) {
      this.setState('Running');
      this.schedule('probe', () => void this.runProbe(gen), 0);
    } else {
      this.setState('Ready');
    }
    this.scheduleLogCheck(gen);
  }

  private terminate(proc: HostProcess, graceMs: number): void {
    this.clearTimer('probe');
    this.log(`stopping: SIGTERM to process group ${proc.pid}, SIGKILL after ${graceMs} ms`);
    this.host.signalGroup(proc.pid, 'SIGTERM');
    this.schedule(
      'kill',
      () => {
        this.log(`grace period over: SIGKILL to process group ${proc.pid}`);
        this.host.signalGroup(proc.pid, 'SIGKILL');
      },
      graceMs,
    );
  }

  private onExit(gen: number, proc: HostProcess | undefined, exit: ExitInfo): void {
    if (gen !== this.generation || this.detached) return;
    const at = this.clock.now();
    this.clearTimer('probe');
    this.clearTimer('log');
    const ranMs = proc && this.startedAt !== undefined ? at - this.startedAt : 0;
    const lastExit: LastExit = { ...exit, at, ranMs, reason: describeExit(exit, this.restartingUnhealthy) };
    if (proc) lastExit.pid = proc.pid;
    this.lastExit = lastExit;
    this.current = undefined;
    this.healthy = undefined;
    if (proc) this.log(`pid ${proc.pid} ${lastExit.reason} after ${ranMs} ms`);
    else this.log(lastExit.reason);
    this.emit({ type: 'exited', id: this.id, at, exit: lastExit });

    if (this.stopRequested) {
      this.finishStop(proc?.pid);
      return;
    }
    this.clearTimer('kill');
    // Workers the leader forked die with it: a crashed engine must not keep holding the GPU.
    if (proc && this.host.groupAlive(proc.pid)) {
      this.log(`SIGKILL to the processes left in group ${proc.pid}`);
      this.host.signalGroup(proc.pid, 'SIGKILL');
    }

    const failed = this.restartingUnhealthy || exit.error !== undefined || exit.statusUnknown === true || exit.code !== 0;
    this.restartingUnhealthy = false;
    const policy = this.spec.restart ?? 'on-failure';
    if (policy === 'never' || (policy === 'on-failure' && !failed)) {
      this.setState(failed ? 'Failed' : 'Stopped');
      return;
    }
    if (ranMs >= (this.spec.backoff?.resetAfterMs ?? DEFAULT_BACKOFF_RESET_MS)) this.consecutiveFailures = 0;
    this.consecutiveFailures++;
    const delayMs = backoffDelay(
      this.consecutiveFailures,
      this.spec.backoff?.baseMs ?? DEFAULT_BACKOFF_BASE_MS,
      this.spec.backoff?.capMs ?? DEFAULT_BACKOFF_CAP_MS,
    );
    this.nextRestartAt = at + delayMs;
    this.setState('Backoff');
    this.log(`restarting in ${delayMs} ms (failure ${this.consecutiveFailures} in a row)`);
    this.emit({ type: 'backoff', id: this.id, at, delayMs, failures: this.consecutiveFailures });
    this.schedule(
      'backoff',
      () => {
        this.nextRestartAt = undefined;
        this.restarts++;
        void this.launch();
      },
      delayMs,
    );
  }

  /** The leader is gone; its group may not be. Waits for the group until the deadline, then SIGKILLs it. */
  private finishStop(pgid: number | undefined): void {
    const finish = (): void => {
      this.clearTimer('kill');
      this.clearTimer('group');
      this.stopRequested = false;
      this.setState('Stopped');
      for (const resolve of this.stopWaiters.splice(0)) resolve();
    };
    if (pgid === undefined) return finish();
    const waitForGroup = (): void => {
      if (!this.host.groupAlive(pgid)) return finish();
      if (this.clock.now() >= this.stopDeadline) {
        this.log(`grace period over: SIGKILL to the processes left in group ${pgid}`);
        this.host.signalGroup(pgid, 'SIGKILL');
        return finish();
      }
      this.schedule('group', waitForGroup, Math.min(100, this.stopDeadline - this.clock.now()));
    };
    waitForGroup();
  }

  private async runProbe(gen: number): Promise<void> {
    const health = this.spec.health;
    if (!health) return;
    const result = await this.probe(health.probe, health.timeoutMs ?? 1_000).catch((err: unknown) => ({
      healthy: false,
      detail: errorMessage(err),
    }));
    if (gen !== this.generation || this.detached || !this.current || this.stopRequested) return;
    if (this.currentState !== 'Running' && this.currentState !== 'Ready') return;
    const at = this.clock.now();
    if (result.healthy) {
      this.probeFailures = 0;
      if (this.healthy !== true) {
        this.healthy = true;
        this.everReady = true;
        this.log(`ready: ${describeProbe(health.probe)} answered (${result.detail})`);
        this.emit({ type: 'health', id: this.id, at, healthy: true, detail: result.detail });
      }
      if (this.currentState === 'Running') this.setState('Ready');
      if (health.untilReady) return;
    } else {
      this.probeFailures++;
      if (this.currentState === 'Ready' && this.probeFailures >= (health.failureThreshold ?? 3)) {
        this.healthy = false;
        this.log(`not ready: ${this.probeFailures} failed probes of ${describeProbe(health.probe)} (${result.detail})`);
        this.emit({ type: 'health', id: this.id, at, healthy: false, detail: result.detail });
        this.setState('Running');
      }
      if (this.everReady && health.restartAfterFailures !== undefined && this.probeFailures >= health.restartAfterFailures) {
        this.log(`unhealthy: ${this.probeFailures} failed probes in a row; restarting`);
        this.restartingUnhealthy = true;
        this.terminate(this.current, this.spec.stopGraceMs ?? DEFAULT_STOP_GRACE_MS);
        return;
      }
    }
    this.schedule('probe', () => void this.runProbe(gen), health.intervalMs ?? 1_000);
  }

  private scheduleLogCheck(gen: number): void {
    const file = this.spec.logFile;
    if (!file) return;
    this.schedule(
      'log',
      () => {
        if (gen !== this.generation || !this.current) return;
        if (rotateLogIfNeeded(file, this.spec.logRotation)) this.emit({ type: 'log-rotated', id: this.id, at: this.clock.now(), file });
        this.scheduleLogCheck(gen);
      },
      this.logCheckIntervalMs,
    );
  }

  private schedule(key: 'backoff' | 'probe' | 'log' | 'kill' | 'group', fn: () => void, ms: number): void {
    this.clearTimer(key);
    this.timers.set(
      key,
      this.clock.setTimeout(() => {
        this.timers.delete(key);
        fn();
      }, ms),
    );
  }

  private clearTimer(key: 'backoff' | 'probe' | 'log' | 'kill' | 'group'): void {
    const handle = this.timers.get(key);
    if (handle === undefined) return;
    this.clock.clearTimeout(handle);
    this.timers.delete(key);
  }

  private setState(state: ProcessState): void {
    const previous = this.currentState;
    if (previous === state) return;
    this.currentState = state;
    this.emit({ type: 'state', id: this.id, at: this.clock.now(), state, previous });
  }

  private emit(event: ProcessEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // a listener's failure is its own; supervision goes on
      }
    }
  }

  private log(text: string): void {
    if (this.spec.logFile) appendLogLine(this.spec.logFile, text, this.clock.now());
  }
}

function describeExit(exit: ExitInfo, unhealthy: boolean): string {
  const why = exit.error
    ? `could not start: ${exit.error}`
    : exit.oomKilled
      ? `OOMKilled: the kernel killed it at its memory limit${exit.signal ? ` (${exit.signal})` : exit.code !== null ? ` (exit code ${exit.code})` : ''}`
    : exit.statusUnknown
      ? 'exited (status unknown: not a child of this runtime)'
      : exit.signal
        ? `killed by ${exit.signal}`
        : `exited with code ${exit.code}`;
  return unhealthy ? `${why} (restarted: failing its health probe)` : why;
}

/** The message of anything thrown (errors from Node's core may come from another realm than `Error`). */
function errorMessage(err: unknown): string {
  const message = (err as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : String(err);
}

import type { ExitInfo, ProcessSpec } from '@gpufleet/process-spec';
import type { HostProcess, ProcessHost } from '../process-host';

/** A process that exists only in a test: it exits when told to, or when signalled. */
export class FakeProcess implements HostProcess {
  readonly exited: Promise<ExitInfo>;
  alive = true;
  released = false;
  /** Keeps running on SIGTERM (only SIGKILL ends it). */
  ignoresSigterm = false;
  /** Another process of its group that outlives it until SIGKILL. */
  leftoverWorker = false;
  private resolveExit!: (info: ExitInfo) => void;

  constructor(
    readonly pid: number,
    readonly startTime: number | undefined,
    readonly spec?: ProcessSpec,
    readonly env?: Record<string, string>,
  ) {
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
  }

  exit(info: ExitInfo): void {
    if (!this.alive) return;
    this.alive = false;
    this.resolveExit(info);
  }

  release(): void {
    this.released = true;
  }
}

export class FakeHost implements ProcessHost {
  readonly spawned: FakeProcess[] = [];
  readonly attached: FakeProcess[] = [];
  readonly signals: Array<{ pgid: number; signal: NodeJS.Signals }> = [];
  /** When set, spawn() rejects with this message (as Node does for ENOENT). */
  spawnError: string | undefined;
  /** Applied to each spawned process. */
  onSpawn: (p: FakeProcess) => void = () => undefined;
  private nextPid = 1000;

  async spawn(spec: ProcessSpec, env: Record<string, string>): Promise<HostProcess> {
    if (this.spawnError) throw new Error(this.spawnError);
    const p = new FakeProcess(this.nextPid++, 42, spec, env);
    this.onSpawn(p);
    this.spawned.push(p);
    return p;
  }

  attach(pid: number, startTime: number): HostProcess {
    const p = new FakeProcess(pid, startTime);
    this.attached.push(p);
    return p;
  }

  signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
    this.signals.push({ pgid, signal });
    const p = this.find(pgid);
    if (!p) return false;
    if (signal === 'SIGKILL') {
      p.leftoverWorker = false;
      p.exit({ code: null, signal });
    } else if (signal === 'SIGTERM' && !p.ignoresSigterm) {
      p.exit({ code: null, signal });
    }
    return true;
  }

  groupAlive(pgid: number): boolean {
    const p = this.find(pgid);
    return p !== undefined && (p.alive || p.leftoverWorker);
  }

  /** The process started last. */
  get last(): FakeProcess {
    const p = this.spawned[this.spawned.length - 1];
    if (!p) throw new Error('nothing was spawned');
    return p;
  }

  private find(pid: number): FakeProcess | undefined {
    return [...this.spawned, ...this.attached].find((p) => p.pid === pid);
  }
}

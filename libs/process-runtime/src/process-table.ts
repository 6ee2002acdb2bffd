import { ProcessRuntimeError, specHash, type ProcessSpec, type ProcessStatus } from '@gpufleet/process-spec';
import { adopt, type AdoptionResult, type AdoptOptions } from './adoption';
import { readCmdline } from './proc';
import type { StateFile } from './state-file';
import { SupervisedProcess, type ProcessListener } from './supervised-process';

/**
 * The processes one node runtime supervises, kept in step with its state file: every start
 * (and restart, which changes the pid) is recorded, every exit unrecorded. One supervisor per
 * id: starting an id that is already supervised is refused, so nothing runs twice.
 */
export class ProcessTable {
  private readonly members = new Map<string, { process: SupervisedProcess; off: () => void }>();
  private readonly listeners = new Set<ProcessListener>();

  constructor(
    readonly stateFile: StateFile,
    private readonly options: AdoptOptions = {},
  ) {}

  /**
   * After a runtime restart, before anything is started: adopts what is still wanted and
   * running, kills what is not, forgets what is gone. Start `toStart` afterwards.
   */
  async restore(desired: readonly ProcessSpec[]): Promise<AdoptionResult> {
    if (this.members.size > 0) throw new ProcessRuntimeError('FAILED_PRECONDITION', 'restore() runs once, before any process is started');
    const result = await adopt(this.stateFile, desired, this.options);
    for (const process of result.adopted) this.register(process);
    return result;
  }

  /** Starts a supervised process for `spec`. Refused while one with its id is supervised. */
  start(spec: ProcessSpec): SupervisedProcess {
    if (this.members.has(spec.id)) {
      throw new ProcessRuntimeError('ALREADY_EXISTS', `process ${spec.id} is already supervised; stop it first to start it with another spec`);
    }
    const process = new SupervisedProcess(spec, this.options);
    this.register(process);
    process.start();
    return process;
  }

  /** Stops the process (SIGTERM, SIGKILL after the grace period) and forgets it. */
  async stop(id: string, graceMs?: number): Promise<void> {
    const member = this.members.get(id);
    if (!member) return;
    await member.process.stop(graceMs);
    member.off();
    this.members.delete(id);
    this.stateFile.remove(id);
  }

  async stopAll(graceMs?: number): Promise<void> {
    await Promise.all([...this.members.keys()].map((id) => this.stop(id, graceMs)));
  }

  /**
   * Runtime shutdown without stopping the workloads: supervision ends, the processes keep
   * running, and the state file still lists them for the next runtime to adopt.
   */
  detachAll(): void {
    for (const { process, off } of this.members.values()) {
      off();
      process.detach();
    }
    this.members.clear();
  }

  get(id: string): SupervisedProcess | undefined {
    return this.members.get(id)?.process;
  }

  list(): SupervisedProcess[] {
    return [...this.members.values()].map((m) => m.process);
  }

  statuses(): ProcessStatus[] {
    return this.list().map((p) => p.status());
  }

  /** Events of every member; returns the unsubscribe function. */
  on(listener: ProcessListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private register(process: SupervisedProcess): void {
    const hash = specHash(process.spec);
    const off = process.on((event) => {
      if (event.type === 'started' && event.startTime !== undefined) {
        this.stateFile.upsert({
          id: process.id,
          pid: event.pid,
          startTime: event.startTime,
          cmdline: readCmdline(event.pid) ?? [process.spec.command, ...(process.spec.args ?? [])],
          specHash: hash,
          startedAt: new Date(event.at).toISOString(),
        });
      } else if (event.type === 'exited' && event.exit.pid !== undefined) {
        this.stateFile.remove(process.id, event.exit.pid);
      }
      for (const listener of [...this.listeners]) listener(event);
    });
    this.members.set(process.id, { process, off });
  }
}

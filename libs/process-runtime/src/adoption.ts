import { DEFAULT_STOP_GRACE_MS, specHash, type ProcessSpec } from '@gpufleet/process-spec';
import { LocalProcessHost, type ProcessHost } from './process-host';
import { isSameProcessAlive, readBootId } from './proc';
import type { StateEntry, StateFile, StateFileContent } from './state-file';
import { SupervisedProcess, type SupervisorOptions } from './supervised-process';

/**
 * What becomes of a process an earlier runtime recorded:
 * - `adopt`: alive (same pid, same start time), still desired, same spec: supervise it as it is;
 * - `kill`: alive but no longer desired, or desired with a changed spec (it is started anew);
 * - `forget`: gone (or the node rebooted): nothing to do but drop the record.
 */
export type AdoptionAction = 'adopt' | 'kill' | 'forget';

export interface AdoptionDecision {
  id: string;
  action: AdoptionAction;
  /** A sentence for the runtime's log, e.g. "pid 4242 is gone". */
  reason: string;
  entry: StateEntry;
}

/**
 * Decides per recorded entry (pure: liveness is asked of `isAlive`). At most one entry per id
 * is adopted; any other alive entry with that id is killed, so nothing runs twice.
 */
export function planAdoption(
  recorded: StateFileContent,
  desired: readonly ProcessSpec[],
  isAlive: (entry: StateEntry) => boolean,
  currentBootId?: string,
): AdoptionDecision[] {
  const wanted = new Map(desired.map((spec) => [spec.id, spec]));
  const rebooted = recorded.bootId !== undefined && currentBootId !== undefined && recorded.bootId !== currentBootId;
  const adoptedIds = new Set<string>();
  return recorded.entries.map((entry): AdoptionDecision => {
    const decide = (action: AdoptionAction, reason: string): AdoptionDecision => ({ id: entry.id, action, reason, entry });
    if (rebooted) return decide('forget', `pid ${entry.pid} was started before the node rebooted`);
    if (!isAlive(entry)) return decide('forget', `pid ${entry.pid} is gone (or its pid now belongs to another process)`);
    const spec = wanted.get(entry.id);
    if (!spec) return decide('kill', `pid ${entry.pid} is no longer desired`);
    if (specHash(spec) !== entry.specHash) return decide('kill', `pid ${entry.pid} runs an older spec; it is replaced`);
    if (adoptedIds.has(entry.id)) return decide('kill', `pid ${entry.pid} duplicates a process already adopted for ${entry.id}`);
    adoptedIds.add(entry.id);
    return decide('adopt', `pid ${entry.pid} is alive with the desired spec`);
  });
}

export interface AdoptOptions extends SupervisorOptions {
  /** Grace period for processes killed because they are no longer desired. Default 30000 ms. */
  killGraceMs?: number;
  /** The current kernel boot id; default read from /proc. */
  bootId?: string;
  /** Default: pid alive (`kill(pid, 0)`) with the recorded start time. */
  isAlive?: (entry: StateEntry) => boolean;
}

export interface AdoptionResult {
  decisions: AdoptionDecision[];
  /** Supervisors of the adopted processes, already supervising. */
  adopted: SupervisedProcess[];
  /** Desired specs that have no process now: the caller starts these (and only these). */
  toStart: ProcessSpec[];
}

/**
 * After a runtime restart: re-adopts, kills or forgets each process the state file records,
 * then rewrites the file with the adopted ones only. Kills complete (SIGTERM to the process
 * group, SIGKILL after the grace period) before this resolves, so the processes that replace
 * them never overlap with them.
 */
export async function adopt(stateFile: StateFile, desired: readonly ProcessSpec[], options: AdoptOptions = {}): Promise<AdoptionResult> {
  const host = options.host ?? new LocalProcessHost();
  const isAlive = options.isAlive ?? ((e: StateEntry) => isSameProcessAlive(e.pid, e.startTime));
  const recorded = stateFile.read();
  const decisions = planAdoption(recorded, desired, isAlive, options.bootId ?? readBootId());

  await Promise.all(
    decisions
      .filter((d) => d.action === 'kill')
      .map((d) => killRecorded(host, d.entry, options.killGraceMs ?? DEFAULT_STOP_GRACE_MS, isAlive)),
  );

  const specs = new Map(desired.map((spec) => [spec.id, spec]));
  const adopted: SupervisedProcess[] = [];
  for (const d of decisions) {
    const spec = specs.get(d.id);
    if (d.action !== 'adopt' || !spec) continue;
    const supervisor = new SupervisedProcess(spec, options);
    supervisor.adopt(d.entry.pid, d.entry.startTime);
    adopted.push(supervisor);
  }
  stateFile.write(decisions.filter((d) => d.action === 'adopt').map((d) => d.entry));
  const adoptedIds = new Set(adopted.map((p) => p.id));
  return { decisions, adopted, toStart: desired.filter((spec) => !adoptedIds.has(spec.id)) };
}

/** SIGTERM to its group, SIGKILL after `graceMs`; resolves once the process and its group are gone. */
async function killRecorded(host: ProcessHost, entry: StateEntry, graceMs: number, isAlive: (e: StateEntry) => boolean): Promise<void> {
  const deadline = Date.now() + graceMs;
  host.signalGroup(entry.pid, 'SIGTERM');
  for (;;) {
    const leaderAlive = isAlive(entry);
    if (!leaderAlive && !host.groupAlive(entry.pid)) return;
    if (Date.now() >= deadline) {
      host.signalGroup(entry.pid, 'SIGKILL');
      // SIGKILL cannot be refused; give the kernel a moment to reap what it can.
      for (let i = 0; i < 50 && isAlive(entry); i++) await sleep(20);
      return;
    }
    await sleep(50);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

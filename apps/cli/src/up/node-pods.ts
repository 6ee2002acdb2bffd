import { existsSync } from 'fs';
import { join } from 'path';
import { stateFilePath } from '@gpufleet/node-runtime-core';
import { LocalProcessHost, ProcessHost, StateEntry, StateFile, isSameProcessAlive } from '@gpufleet/process-runtime';

/** STATE_DIR of the node runtime `gpufleet up` starts for `node`. */
/** Where a local stack's node runtimes keep their nodes' state: one directory per node. */
export function nodesDir(home: string): string {
  return join(home, 'nodes');
}

export function nodeStateDir(home: string, node: string): string {
  return join(nodesDir(home), node);
}

export interface PodKillOptions {
  /** SIGTERM → SIGKILL, ms. */
  graceMs?: number;
  host?: ProcessHost;
  isAlive?: (e: StateEntry) => boolean;
  log?: (line: string) => void;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** SIGTERM to the process group, SIGKILL after the grace period; resolves once the group is gone. */
async function killEntry(entry: StateEntry, host: ProcessHost, isAlive: (e: StateEntry) => boolean, graceMs: number): Promise<boolean> {
  if (!isAlive(entry)) return false;
  host.signalGroup(entry.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(entry) || host.groupAlive(entry.pid)) {
    if (Date.now() >= deadline) {
      host.signalGroup(entry.pid, 'SIGKILL');
      for (let i = 0; i < 50 && isAlive(entry); i++) await sleep(20);
      break;
    }
    await sleep(50);
  }
  return true;
}

/**
 * Node runtimes detach from their pods on SIGTERM so a restarted runtime can adopt them. When
 * `gpufleet up` shuts the whole stack down nothing will adopt them: this kills every process the
 * runtimes' state files (`<STATE_DIR>/processes.json`) still record (same pid and start time, so
 * a reused pid is never hit) and rewrites the files without them. Returns how many were running.
 */
export async function killRecordedPods(stateDirs: readonly string[], o: PodKillOptions = {}): Promise<number> {
  const host = o.host ?? new LocalProcessHost();
  const isAlive = o.isAlive ?? ((e: StateEntry) => isSameProcessAlive(e.pid, e.startTime));
  const files = stateDirs.map(stateFilePath).filter((path) => existsSync(path)).map((path) => new StateFile(path));
  const killed = await Promise.all(
    files.map(async (file) => {
      let entries: StateEntry[];
      try {
        entries = file.entries();
      } catch (err) {
        o.log?.(`! cannot read ${file.path}: ${(err as Error).message}`);
        return 0;
      }
      const results = await Promise.all(entries.map((e) => killEntry(e, host, isAlive, o.graceMs ?? 10_000)));
      file.write(entries.filter((e) => isAlive(e)));
      return results.filter(Boolean).length;
    }),
  );
  return killed.reduce((a, b) => a + b, 0);
}

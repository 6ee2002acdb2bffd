import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { waitFor } from '@gpufleet/process-kit';
import type { ProcessSpec } from '@gpufleet/process-spec';
import { isSameProcessAlive, readCmdline } from './proc';
import { ProcessTable } from './process-table';
import { StateFile } from './state-file';

// A runtime restart, simulated: a first ProcessTable starts real processes and is dropped
// without stopping them (detachAll, as on runtime shutdown or crash); a second one restores
// from the same state file.
let dir: string;
let tables: ProcessTable[] = [];
const options = { adoptedPollMs: 50, killGraceMs: 2_000 };

beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gpufleet-adoption-'))));
afterEach(async () => {
  await Promise.all(tables.map((t) => t.stopAll(0)));
  tables = [];
  rmSync(dir, { recursive: true, force: true });
});

function sleeper(id: string, seconds = 300): ProcessSpec {
  return { id, command: '/bin/sleep', args: [String(seconds)], logFile: join(dir, `${id}.log`), backoff: { baseMs: 50 } };
}

function table(): ProcessTable {
  const t = new ProcessTable(new StateFile(join(dir, 'processes.json')), options);
  tables.push(t);
  return t;
}

async function startAll(t: ProcessTable, specs: ProcessSpec[]): Promise<Map<string, { pid: number; startTime: number }>> {
  const ids = new Map<string, { pid: number; startTime: number }>();
  for (const spec of specs) {
    const s = await t.start(spec).waitForState('Ready');
    ids.set(spec.id, { pid: s.pid!, startTime: s.startTime! });
  }
  return ids;
}

describe('adoption across a runtime restart', () => {
  it('keeps the same pid for a desired process, kills an undesired one and forgets a dead one', async () => {
    const first = table();
    const [kept, undesired, dead] = [sleeper('kept'), sleeper('undesired'), sleeper('dead')];
    const before = await startAll(first, [kept, undesired, dead]);
    expect(first.stateFile.entries().map((e) => [e.id, e.pid])).toEqual([...before].map(([id, p]) => [id, p.pid]));
    expect(first.stateFile.entries()[0].cmdline).toEqual(['/bin/sleep', '300']);

    first.detachAll(); // the runtime goes away; its processes do not
    tables = tables.filter((t) => t !== first);
    process.kill(before.get('dead')!.pid, 'SIGKILL'); // one dies while no runtime watches
    await waitFor('the dead process to be gone', () => !isSameProcessAlive(before.get('dead')!.pid, before.get('dead')!.startTime) || undefined);

    const second = table();
    const result = await second.restore([kept, dead]);

    expect(Object.fromEntries(result.decisions.map((d) => [d.id, d.action]))).toEqual({ kept: 'adopt', undesired: 'kill', dead: 'forget' });
    expect(result.toStart.map((s) => s.id)).toEqual(['dead']);
    // The desired process was not restarted: same pid, same start time, now supervised.
    const adopted = second.get('kept')!;
    expect(adopted.status()).toMatchObject({ state: 'Ready', adopted: true, pid: before.get('kept')!.pid });
    expect(isSameProcessAlive(before.get('kept')!.pid, before.get('kept')!.startTime)).toBe(true);
    // The undesired one is gone before restore() resolved.
    expect(isSameProcessAlive(before.get('undesired')!.pid, before.get('undesired')!.startTime)).toBe(false);
    expect(second.stateFile.entries().map((e) => e.id)).toEqual(['kept']);

    // Only what has no process is started: nothing twice.
    expect(() => second.start(kept)).toThrow(/ALREADY_EXISTS/);
    const restarted = await second.start(result.toStart[0]).waitForState('Ready');
    expect(restarted.pid).not.toBe(before.get('dead')!.pid);
    expect(second.stateFile.entries().map((e) => [e.id, e.pid])).toEqual([
      ['kept', before.get('kept')!.pid],
      ['dead', restarted.pid],
    ]);

    // Stopping an adopted process works through its process group like any other.
    await second.stop('kept', 2_000);
    expect(isSameProcessAlive(before.get('kept')!.pid, before.get('kept')!.startTime)).toBe(false);
    expect(second.stateFile.entries().map((e) => e.id)).toEqual(['dead']);
  });

  it('replaces a process whose spec changed while the runtime was away', async () => {
    const first = table();
    const before = await startAll(first, [sleeper('engine', 300)]);
    first.detachAll();
    tables = tables.filter((t) => t !== first);

    const second = table();
    const changed = sleeper('engine', 301);
    const result = await second.restore([changed]);
    expect(result.decisions.map((d) => d.action)).toEqual(['kill']);
    expect(isSameProcessAlive(before.get('engine')!.pid, before.get('engine')!.startTime)).toBe(false);
    const s = await second.start(result.toStart[0]).waitForState('Ready');
    expect(readCmdline(s.pid!)).toEqual(['/bin/sleep', '301']);
  });

  it('restarts an adopted process that dies later, as a child of the new runtime', async () => {
    const first = table();
    const before = await startAll(first, [sleeper('engine')]);
    first.detachAll();
    tables = tables.filter((t) => t !== first);

    const second = table();
    await second.restore([sleeper('engine')]);
    const engine = second.get('engine')!;
    process.kill(before.get('engine')!.pid, 'SIGKILL');
    const s = await engine.waitFor((st) => st.state === 'Ready' && st.pid !== undefined && st.pid !== before.get('engine')!.pid, 5_000, 'a new process');
    expect(s).toMatchObject({ adopted: false, restarts: 1, lastExit: { statusUnknown: true } });
    expect(second.stateFile.entries().map((e) => e.pid)).toEqual([s.pid]);
  });

  it('forgets everything after a reboot (another boot id) without signalling the recorded pids', async () => {
    const first = table();
    const before = await startAll(first, [sleeper('engine')]);
    first.detachAll();
    tables = tables.filter((t) => t !== first);

    const second = new ProcessTable(new StateFile(join(dir, 'processes.json')), { ...options, bootId: 'another-boot' });
    const result = await second.restore([sleeper('engine')]);
    expect(result.decisions.map((d) => d.action)).toEqual(['forget']);
    // In this test the "old" process is in fact still running: clean it up by hand.
    expect(isSameProcessAlive(before.get('engine')!.pid, before.get('engine')!.startTime)).toBe(true);
    process.kill(-before.get('engine')!.pid, 'SIGKILL');
  });
});

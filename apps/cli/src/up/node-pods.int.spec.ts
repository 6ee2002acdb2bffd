import { spawn } from 'child_process';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { LocalProcessHost, StateFile, isSameProcessAlive, readProcStat } from '@gpufleet/process-runtime';
import { stateFilePath } from '@gpufleet/node-runtime-core';
import { killRecordedPods } from './node-pods';

describe('killRecordedPods against real processes', () => {
  it('kills a detached process group a node runtime left behind, workers included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpufleet-state-'));
    // A leader that ignores SIGTERM with a worker of its own, like an engine with its workers.
    const child = spawn('sh', ['-c', 'trap "" TERM; sleep 300 & wait'], { detached: true, stdio: 'ignore' });
    child.unref();
    const pid = child.pid!;
    await new Promise((r) => setTimeout(r, 100));
    const stat = readProcStat(pid)!;
    new StateFile(stateFilePath(dir)).write([
      { id: 'llama/0', pid, startTime: stat.startTime, cmdline: ['sh'], specHash: 'sha256:x', startedAt: new Date().toISOString() },
    ]);

    expect(await killRecordedPods([dir], { graceMs: 300 })).toBe(1);
    expect(isSameProcessAlive(pid, stat.startTime)).toBe(false);
    expect(new LocalProcessHost().groupAlive(pid)).toBe(false); // zombies aside: the leader is this process's child
    rmSync(dir, { recursive: true, force: true });
  });
});

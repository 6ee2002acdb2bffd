import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { ProcessHost, StateEntry, StateFile } from '@gpufleet/process-runtime';
import { killRecordedPods, nodeStateDir } from './node-pods';

const RUNTIME_STATE_FILE = 'processes.json'; // stateFilePath() of @gpufleet/node-runtime-core

const entry = (id: string, pid: number): StateEntry => ({ id, pid, startTime: 1000 + pid, cmdline: ['engine'], specHash: 'sha256:x', startedAt: '2026-01-01T00:00:00Z' });

/** A host whose processes exit on SIGTERM, except those listed as stubborn (they need SIGKILL). */
function fakeHost(alive: Set<number>, stubborn: Set<number> = new Set()) {
  const signals: string[] = [];
  const host: ProcessHost = {
    spawn: () => Promise.reject(new Error('unused')),
    attach: () => {
      throw new Error('unused');
    },
    signalGroup: (pgid, signal) => {
      signals.push(`${pgid}:${signal}`);
      if (signal === 'SIGKILL' || !stubborn.has(pgid)) alive.delete(pgid);
      return true;
    },
    groupAlive: (pgid) => alive.has(pgid),
  };
  return { host, signals, isAlive: (e: StateEntry) => alive.has(e.pid) };
}

const tmp: string[] = [];
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tmp.push(dir);
  return dir;
};
afterAll(() => tmp.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('killRecordedPods', () => {
  it('terminates every recorded live process group, escalates to SIGKILL, and empties the files', async () => {
    const home = tempDir('gpufleet-home-');
    const a = nodeStateDir(home, 'h100-0');
    const b = nodeStateDir(home, 'h100-1');
    mkdirSync(a, { recursive: true });
    mkdirSync(b, { recursive: true });
    new StateFile(join(a, RUNTIME_STATE_FILE)).write([entry('llama/0', 101), entry('gone/0', 102)]);
    new StateFile(join(b, RUNTIME_STATE_FILE)).write([entry('dev-box/0', 201)]);
    const { host, signals, isAlive } = fakeHost(new Set([101, 201]), new Set([201]));

    const killed = await killRecordedPods([a, b, nodeStateDir(home, 'never-started')], { host, isAlive, graceMs: 50 });

    expect(killed).toBe(2);
    expect(signals).toEqual(expect.arrayContaining(['101:SIGTERM', '201:SIGTERM', '201:SIGKILL']));
    expect(signals).not.toContain('102:SIGTERM'); // not alive (or its pid now belongs to another process)
    expect(signals).not.toContain('101:SIGKILL');
    expect(JSON.parse(readFileSync(join(a, RUNTIME_STATE_FILE), 'utf8')).entries).toEqual([]);
    expect(JSON.parse(readFileSync(join(b, RUNTIME_STATE_FILE), 'utf8')).entries).toEqual([]);
  });

  it('reports a state file it cannot read and goes on', async () => {
    const dir = tempDir('gpufleet-state-');
    writeFileSync(join(dir, RUNTIME_STATE_FILE), 'garbage');
    const lines: string[] = [];
    const { host, isAlive } = fakeHost(new Set());
    expect(await killRecordedPods([dir], { host, isAlive, log: (l) => lines.push(l) })).toBe(0);
    expect(lines[0]).toMatch(/^! cannot read .*processes.json: DATA_LOSS/);
  });
});

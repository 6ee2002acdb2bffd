import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { specHash, type ProcessSpec } from '@gpufleet/process-spec';
import { planAdoption } from './adoption';
import { parseProcStat } from './proc';
import { StateFile, type StateEntry } from './state-file';

const engine: ProcessSpec = { id: 'llama/0', command: '/opt/vllm/bin/vllm', args: ['serve', '/models/llama'], env: { CUDA_VISIBLE_DEVICES: '0' } };
const sshd: ProcessSpec = { id: 'instance/dev/sshd', command: '/usr/sbin/sshd', args: ['-D', '-e', '-f', '/var/lib/gpufleet/i/dev/sshd_config'] };

function entry(spec: ProcessSpec, pid: number, hash = specHash(spec)): StateEntry {
  return { id: spec.id, pid, startTime: pid * 10, cmdline: [spec.command, ...(spec.args ?? [])], specHash: hash, startedAt: '2025-01-01T00:00:00.000Z' };
}

describe('planAdoption', () => {
  const alive = (pids: number[]) => (e: StateEntry) => pids.includes(e.pid);

  it('adopts a live process that is still desired with the same spec', () => {
    const decisions = planAdoption({ version: 1, entries: [entry(engine, 100)] }, [engine], alive([100]));
    expect(decisions).toEqual([expect.objectContaining({ id: 'llama/0', action: 'adopt' })]);
  });

  it('kills a live process that is no longer desired', () => {
    const decisions = planAdoption({ version: 1, entries: [entry(sshd, 200)] }, [engine], alive([200]));
    expect(decisions).toEqual([expect.objectContaining({ action: 'kill', reason: 'pid 200 is no longer desired' })]);
  });

  it('kills a live process whose spec changed (it is started anew)', () => {
    const changed = { ...engine, env: { CUDA_VISIBLE_DEVICES: '1' } };
    const decisions = planAdoption({ version: 1, entries: [entry(engine, 100)] }, [changed], alive([100]));
    expect(decisions[0]).toMatchObject({ action: 'kill', reason: 'pid 100 runs an older spec; it is replaced' });
  });

  it('forgets a process that is gone, desired or not', () => {
    const decisions = planAdoption({ version: 1, entries: [entry(engine, 100), entry(sshd, 200)] }, [engine], alive([]));
    expect(decisions.map((d) => d.action)).toEqual(['forget', 'forget']);
  });

  it('forgets everything recorded before a reboot, even if the pids are alive again', () => {
    const decisions = planAdoption({ version: 1, bootId: 'boot-a', entries: [entry(engine, 100)] }, [engine], alive([100]), 'boot-b');
    expect(decisions[0]).toMatchObject({ action: 'forget', reason: 'pid 100 was started before the node rebooted' });
  });

  it('adopts one process per id and kills a duplicate', () => {
    const decisions = planAdoption({ version: 1, entries: [entry(engine, 100), entry(engine, 101)] }, [engine], alive([100, 101]));
    expect(decisions.map((d) => d.action)).toEqual(['adopt', 'kill']);
  });

  it('does not restart a process because of probe, restart or grace settings', () => {
    const retuned = { ...engine, restart: 'always' as const, stopGraceMs: 1, health: { probe: { kind: 'tcp' as const, port: 8000 } } };
    expect(specHash(retuned)).toBe(specHash(engine));
    expect(specHash({ ...engine, env: { CUDA_VISIBLE_DEVICES: '0', B: '1' } })).not.toBe(specHash(engine));
    expect(specHash({ ...engine, env: { B: '1', CUDA_VISIBLE_DEVICES: '0' } })).toBe(specHash({ ...engine, env: { CUDA_VISIBLE_DEVICES: '0', B: '1' } }));
  });
});

describe('StateFile', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gpufleet-state-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads as empty before the first write', () => {
    expect(new StateFile(join(dir, 'processes.json')).read()).toEqual({ version: 1, entries: [] });
  });

  it('records, replaces and removes entries, with the boot id, leaving no temp files', () => {
    const file = new StateFile(join(dir, 'processes.json'), 'boot-a');
    file.upsert(entry(engine, 100));
    file.upsert(entry(sshd, 200));
    file.upsert(entry(engine, 101));
    expect(file.read()).toEqual({ version: 1, bootId: 'boot-a', entries: [entry(sshd, 200), entry(engine, 101)] });
    file.remove(engine.id, 100); // an older pid: the newer entry stays
    expect(file.entries().map((e) => e.pid)).toEqual([200, 101]);
    file.remove(engine.id);
    expect(file.entries().map((e) => e.pid)).toEqual([200]);
    expect(readdirSync(dir)).toEqual(['processes.json']);
  });

  it('refuses a file that is not a state file instead of guessing', () => {
    const path = join(dir, 'processes.json');
    writeFileSync(path, '{"version": 1, "entries": [{"id": "x"}]}');
    expect(() => new StateFile(path).read()).toThrow(/DATA_LOSS: state file .* is not a gpufleet process state file/);
    expect(readFileSync(path, 'utf8')).toContain('"id": "x"');
  });
});

describe('parseProcStat', () => {
  it('reads state, parent, process group and start time, even when the command name holds ") ("', () => {
    const line = '4242 (vllm ) (serve) S 1 4242 4242 0 -1 4194560 1 0 0 0 5 3 0 0 20 0 12 0 987654 1000000 500 18446744073709551615';
    expect(parseProcStat(line)).toEqual({ pid: 4242, state: 'S', ppid: 1, pgrp: 4242, startTime: 987654 });
  });

  it('returns undefined for a line that is not a stat line', () => {
    expect(parseProcStat('garbage')).toBeUndefined();
  });
});

import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { freePort, waitFor } from '@gpufleet/process-kit';
import type { ProcessSpec } from '@gpufleet/process-spec';
import { LocalProcessHost } from './process-host';
import { isSameProcessAlive, signalReaches } from './proc';
import { SupervisedProcess, type ProcessEvent } from './supervised-process';

// Real child processes: sh and node, started, crashed, signalled and probed for real.
let dir: string;
const running: SupervisedProcess[] = [];

beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gpufleet-supervised-'))));
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop(0)));
  rmSync(dir, { recursive: true, force: true });
});

function supervise(spec: Omit<ProcessSpec, 'id'> & { id?: string }, options: ConstructorParameters<typeof SupervisedProcess>[1] = {}) {
  const proc = new SupervisedProcess({ id: 'test', logFile: join(dir, 'test.log'), ...spec }, options);
  const events: ProcessEvent[] = [];
  proc.on((e) => events.push(e));
  running.push(proc);
  return { proc, events, log: () => readFileSync(join(dir, 'test.log'), 'utf8') };
}

const node = (script: string): Pick<ProcessSpec, 'command' | 'args'> => ({ command: process.execPath, args: ['-e', script] });

describe('SupervisedProcess with real processes', () => {
  it('restarts a crashing child with a growing backoff', async () => {
    const { proc, events, log } = supervise({ command: '/bin/sh', args: ['-c', 'echo crashing; exit 3'], backoff: { baseMs: 100, capMs: 400 } });
    proc.start();
    await proc.waitFor(() => events.filter((e) => e.type === 'started').length >= 5, 10_000, '4 restarts');
    const backoffs = events.filter((e): e is Extract<ProcessEvent, { type: 'backoff' }> => e.type === 'backoff');
    expect(backoffs.slice(0, 4).map((e) => e.delayMs)).toEqual([100, 200, 400, 400]);
    // Each restart came no sooner than its delay after the exit before it.
    const exits = events.filter((e) => e.type === 'exited').map((e) => e.at);
    const starts = events.filter((e) => e.type === 'started').map((e) => e.at);
    for (let i = 0; i < 4; i++) expect(starts[i + 1] - exits[i]).toBeGreaterThanOrEqual(backoffs[i].delayMs - 5);
    expect(proc.status().lastExit).toMatchObject({ code: 3, reason: 'exited with code 3' });
    expect(log()).toMatch(/crashing\n[^]*pid \d+ exited with code 3 after \d+ ms\n\[gpufleet\] \S+ restarting in 100 ms \(failure 1 in a row\)/);
  });

  it('stops a child that ignores SIGTERM with SIGKILL after the grace period, its whole group included', async () => {
    const { proc, log } = supervise({
      command: '/bin/sh',
      // The trap keeps sh alive on SIGTERM; the backgrounded sleep is a worker in its group.
      args: ['-c', 'trap "echo got SIGTERM" TERM; echo armed; sleep 300 & while true; do sleep 0.05; done'],
      stopGraceMs: 600,
    });
    proc.start();
    const { pid } = await proc.waitForState('Ready');
    await waitFor('the trap', () => log().includes('armed\n') || undefined);
    const started = Date.now();
    await proc.stop();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(550);
    expect(took).toBeLessThan(5_000);
    expect(proc.status()).toMatchObject({ state: 'Stopped', lastExit: { signal: 'SIGKILL' } });
    expect(log()).toContain('got SIGTERM');
    expect(log()).toContain('grace period over: SIGKILL');
    // The orphaned sleep got the SIGKILL with its group; on a loaded machine it can take a moment
    // before init reaps it, and until then kill(-pgid, 0) still finds it.
    await waitFor('the whole group gone', () => !new LocalProcessHost().groupAlive(pid!) || undefined, { timeoutMs: 2_000, intervalMs: 20 });
  });

  it('stops a well-behaved child at once with SIGTERM', async () => {
    const { proc } = supervise({ command: '/bin/sleep', args: ['300'], stopGraceMs: 10_000 });
    proc.start();
    const { pid, startTime } = await proc.waitForState('Ready');
    const started = Date.now();
    await proc.stop();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(proc.status().lastExit).toMatchObject({ signal: 'SIGTERM' });
    expect(isSameProcessAlive(pid!, startTime!)).toBe(false);
  });

  it('captures stdout and stderr in the log file and rotates it by size', async () => {
    const { proc, events, log } = supervise(
      {
        command: '/bin/sh',
        args: ['-c', 'echo to-stdout; echo to-stderr >&2; i=0; while [ $i -lt 400 ]; do echo "line $i ................................"; i=$((i+1)); done; sleep 300'],
        logRotation: { maxBytes: 2_000, keep: 2 },
      },
      { logCheckIntervalMs: 50 },
    );
    proc.start();
    await proc.waitFor(() => events.filter((e) => e.type === 'log-rotated').length >= 1, 5_000, 'a log rotation');
    const file = join(dir, 'test.log');
    const rotated = readFileSync(`${file}.1`, 'utf8');
    expect(rotated).toMatch(/^\[gpufleet\] \S+ starting: \/bin\/sh -c/);
    expect(rotated).toContain('to-stdout\n');
    expect(rotated).toContain('to-stderr\n');
    expect(rotated).toContain('line 399 ');
    expect(statSync(file).size).toBeLessThan(2_000);
    expect(existsSync(`${file}.3`)).toBe(false);
    await proc.stop();
    expect(log()).toContain('stopping: SIGTERM to process group');
  });

  it('is Running until its HTTP health probe answers, then Ready', async () => {
    const port = await freePort();
    const { proc, events } = supervise({
      ...node(`setTimeout(() => require('http').createServer((q, s) => { s.statusCode = q.url === '/health' ? 200 : 404; s.end(); }).listen(${port}, '127.0.0.1'), 400)`),
      health: { probe: { kind: 'http', url: `http://127.0.0.1:${port}/health` }, intervalMs: 50, timeoutMs: 500 },
    });
    const started = Date.now();
    proc.start();
    await proc.waitForState('Running', 5_000);
    const ready = await proc.waitForState('Ready', 10_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(ready.healthy).toBe(true);
    expect(events.filter((e) => e.type === 'state').map((e) => (e as { state: string }).state)).toEqual(['Starting', 'Running', 'Ready']);
    expect(events).toContainEqual(expect.objectContaining({ type: 'health', healthy: true, detail: 'HTTP 200' }));
  });

  it('stays Running while the health endpoint answers 503', async () => {
    const port = await freePort();
    const { proc } = supervise({
      ...node(`require('http').createServer((q, s) => { s.statusCode = 503; s.end(); }).listen(${port}, '127.0.0.1')`),
      health: { probe: { kind: 'http', url: `http://127.0.0.1:${port}/health` }, intervalMs: 50 },
    });
    proc.start();
    await proc.waitForState('Running');
    await new Promise((r) => setTimeout(r, 700));
    expect(proc.state).toBe('Running');
  });

  it('restarts a child whose command does not exist, reporting why', async () => {
    const { proc } = supervise({ command: join(dir, 'no-such-engine'), backoff: { baseMs: 50 } });
    proc.start();
    const s = await proc.waitForState('Backoff');
    expect(s.lastExit?.reason).toMatch(/could not start: spawn .*no-such-engine ENOENT/);
  });

  it('says so when the working directory is missing, instead of blaming the command', async () => {
    const { proc } = supervise({ command: '/bin/true', cwd: join(dir, 'missing'), backoff: { baseMs: 50 } });
    proc.start();
    const s = await proc.waitForState('Backoff');
    expect(s.lastExit?.reason).toBe(`could not start: working directory ${join(dir, 'missing')} does not exist`);
  });

  it('starts children in their own process group, with the spec env and cwd', async () => {
    const { proc, log } = supervise({ command: '/bin/sh', args: ['-c', 'echo "pgid=$(ps -o pgid= -p $$ | tr -d " ") pid=$$ cwd=$(pwd) model=$MODEL"; sleep 300'], env: { MODEL: '/models/x' }, cwd: '/tmp' });
    proc.start();
    const { pid } = await proc.waitForState('Ready');
    await waitFor('the output', () => /pgid=\d/.test(log()) || undefined);
    expect(log()).toContain(`pgid=${pid} pid=${pid} cwd=/tmp model=/models/x`);
    expect(signalReaches(-pid!)).toBe(true);
  });
});

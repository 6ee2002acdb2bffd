import { backoffDelay, type ProcessSpec } from '@gpufleet/process-spec';
import { FakeHost } from './__fixtures__/fake-host';
import { ManualClock } from './clock';
import type { ProbeResult } from './health-probe';
import { SupervisedProcess, type ProcessEvent, type SupervisorOptions } from './supervised-process';

function setup(spec: Partial<ProcessSpec> = {}, options: SupervisorOptions = {}) {
  const clock = new ManualClock();
  const host = new FakeHost();
  const events: ProcessEvent[] = [];
  const proc = new SupervisedProcess({ id: 'engine', command: '/opt/engine', ...spec }, { clock, host, baseEnv: {}, ...options });
  proc.on((e) => events.push(e));
  const delays = () => events.flatMap((e) => (e.type === 'backoff' ? [e.delayMs] : []));
  const states = () => events.flatMap((e) => (e.type === 'state' ? [e.state] : []));
  return { clock, host, proc, events, delays, states };
}

describe('backoffDelay', () => {
  it('doubles from the base and stops at the cap (default 5 min)', () => {
    const schedule = Array.from({ length: 12 }, (_, i) => backoffDelay(i + 1));
    expect(schedule).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000, 300_000]);
  });

  it('never overflows for long crash loops', () => {
    expect(backoffDelay(5_000, 1_000, 300_000)).toBe(300_000);
  });
});

describe('SupervisedProcess', () => {
  describe('restarts', () => {
    it('restarts a crashing process with a delay that doubles up to the cap', async () => {
      const { clock, host, proc, delays } = setup({ backoff: { baseMs: 1_000, capMs: 10_000 } });
      proc.start();
      await clock.advance(0);
      for (let i = 0; i < 6; i++) {
        host.last.exit({ code: 1, signal: null });
        await clock.advance(0);
        expect(proc.state).toBe('Backoff');
        await clock.advance(delays()[i]);
        expect(proc.state).toBe('Ready');
      }
      expect(delays()).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
      expect(host.spawned).toHaveLength(7);
      expect(proc.status()).toMatchObject({ restarts: 6, consecutiveFailures: 6, lastExit: { code: 1, reason: 'exited with code 1' } });
    });

    it('waits the whole delay before restarting', async () => {
      const { clock, host, proc } = setup({ backoff: { baseMs: 5_000 } });
      proc.start();
      await clock.advance(0);
      host.last.exit({ code: 1, signal: null });
      await clock.advance(4_999);
      expect(host.spawned).toHaveLength(1);
      expect(proc.status().nextRestartAt).toBe(clock.now() + 1);
      await clock.advance(1);
      expect(host.spawned).toHaveLength(2);
    });

    it('starts the backoff over after a run longer than resetAfterMs', async () => {
      const { clock, host, proc, delays } = setup({ backoff: { baseMs: 1_000, resetAfterMs: 60_000 } });
      proc.start();
      await clock.advance(0);
      for (let i = 0; i < 3; i++) {
        host.last.exit({ code: 1, signal: null });
        await clock.advance(0);
        await clock.advance(delays()[i]);
      }
      await clock.advance(60_000);
      host.last.exit({ code: 1, signal: null });
      await clock.advance(0);
      expect(delays()).toEqual([1_000, 2_000, 4_000, 1_000]);
    });

    it('on-failure (the default) does not restart a process that exited with code 0', async () => {
      const { clock, host, proc } = setup();
      proc.start();
      await clock.advance(0);
      host.last.exit({ code: 0, signal: null });
      await clock.advance(600_000);
      expect(proc.state).toBe('Stopped');
      expect(host.spawned).toHaveLength(1);
    });

    it('on-failure restarts a process killed by a signal', async () => {
      const { clock, host, proc } = setup();
      proc.start();
      await clock.advance(0);
      host.last.exit({ code: null, signal: 'SIGSEGV' });
      await clock.advance(0);
      expect(proc.state).toBe('Backoff');
      expect(proc.status().lastExit?.reason).toBe('killed by SIGSEGV');
    });

    it('always restarts even after code 0', async () => {
      const { clock, host, proc } = setup({ restart: 'always' });
      proc.start();
      await clock.advance(0);
      host.last.exit({ code: 0, signal: null });
      await clock.advance(1_000);
      expect(host.spawned).toHaveLength(2);
    });

    it('never restarts with policy never: a failure is final', async () => {
      const { clock, host, proc } = setup({ restart: 'never' });
      proc.start();
      await clock.advance(0);
      host.last.exit({ code: 3, signal: null });
      await clock.advance(600_000);
      expect(proc.state).toBe('Failed');
      expect(host.spawned).toHaveLength(1);
    });

    it('counts a command that cannot start as a failure and backs off', async () => {
      const { clock, host, proc } = setup();
      host.spawnError = 'spawn /opt/engine ENOENT';
      proc.start();
      await clock.advance(0);
      expect(proc.state).toBe('Backoff');
      expect(proc.status().lastExit).toMatchObject({ reason: 'could not start: spawn /opt/engine ENOENT', ranMs: 0 });
      host.spawnError = undefined;
      await clock.advance(1_000);
      expect(proc.state).toBe('Ready');
    });

    it('kills workers left in the group of a crashed leader before restarting', async () => {
      const { clock, host, proc } = setup();
      proc.start();
      await clock.advance(0);
      const first = host.last;
      first.leftoverWorker = true;
      first.exit({ code: 1, signal: null });
      await clock.advance(0);
      expect(host.signals).toEqual([{ pgid: first.pid, signal: 'SIGKILL' }]);
    });
  });

  describe('states', () => {
    it('goes Starting, Ready without a probe, and Stopping, Stopped on stop', async () => {
      const { clock, proc, states } = setup();
      proc.start();
      await clock.advance(0);
      const stopped = proc.stop();
      await clock.advance(0);
      await stopped;
      expect(states()).toEqual(['Starting', 'Ready', 'Stopping', 'Stopped']);
    });

    it('refuses to start a process that is already running', async () => {
      const { clock, proc } = setup();
      proc.start();
      await clock.advance(0);
      expect(() => proc.start()).toThrow(/FAILED_PRECONDITION: process engine is already Ready/);
    });

    it('passes the base environment and the spec env to the process', async () => {
      const { clock, host, proc } = setup({ env: { MODEL: '/models/llama', PORT: '8000' } }, { baseEnv: { PATH: '/usr/bin' } });
      proc.start();
      await clock.advance(0);
      expect(host.last.env).toEqual({ PATH: '/usr/bin', MODEL: '/models/llama', PORT: '8000' });
    });

    it('by default never passes on the device visibility variables of the runtime itself', async () => {
      const saved = process.env.CUDA_VISIBLE_DEVICES;
      process.env.CUDA_VISIBLE_DEVICES = '0,1,2,3';
      try {
        const clock = new ManualClock();
        const host = new FakeHost();
        const proc = new SupervisedProcess({ id: 'x', command: '/bin/true', env: { HIP_VISIBLE_DEVICES: '0' } }, { clock, host });
        proc.start();
        await clock.advance(0);
        expect(host.last.env).not.toHaveProperty('CUDA_VISIBLE_DEVICES');
        expect(host.last.env).toHaveProperty('HIP_VISIBLE_DEVICES', '0');
      } finally {
        if (saved === undefined) delete process.env.CUDA_VISIBLE_DEVICES;
        else process.env.CUDA_VISIBLE_DEVICES = saved;
      }
    });

    it('refuses an invalid spec, naming the field', () => {
      expect(() => new SupervisedProcess({ id: 'x', command: '/bin/true', cwd: 'relative' })).toThrow(/INVALID_ARGUMENT: process "x": cwd "relative" must be an absolute path/);
      expect(() => new SupervisedProcess({ id: 'x', command: '/bin/true', env: { 'A-B': '1' } })).toThrow(/not a valid name/);
      expect(() => new SupervisedProcess({ id: 'x', command: '/bin/true', backoff: { capMs: 0 } })).toThrow(/backoff.capMs/);
    });
  });

  describe('stop', () => {
    it('sends SIGTERM to the process group and SIGKILL after the grace period', async () => {
      const { clock, host, proc } = setup({ stopGraceMs: 5_000 });
      host.onSpawn = (p) => (p.ignoresSigterm = true);
      proc.start();
      await clock.advance(0);
      const pid = host.last.pid;
      let stopped = false;
      void proc.stop().then(() => (stopped = true));
      await clock.advance(0);
      expect(proc.state).toBe('Stopping');
      expect(host.signals).toEqual([{ pgid: pid, signal: 'SIGTERM' }]);
      await clock.advance(4_999);
      expect(stopped).toBe(false);
      await clock.advance(1);
      expect(host.signals).toEqual([
        { pgid: pid, signal: 'SIGTERM' },
        { pgid: pid, signal: 'SIGKILL' },
      ]);
      expect(stopped).toBe(true);
      expect(proc.status()).toMatchObject({ state: 'Stopped', lastExit: { signal: 'SIGKILL' } });
    });

    it('waits for workers that outlive the leader, then SIGKILLs them at the end of the grace period', async () => {
      const { clock, host, proc } = setup({ stopGraceMs: 2_000 });
      host.onSpawn = (p) => (p.leftoverWorker = true);
      proc.start();
      await clock.advance(0);
      let stopped = false;
      void proc.stop().then(() => (stopped = true));
      await clock.advance(1_000);
      expect(stopped).toBe(false);
      await clock.advance(1_000);
      expect(stopped).toBe(true);
      expect(host.signals.map((s) => s.signal)).toEqual(['SIGTERM', 'SIGKILL']);
    });

    it('cancels a pending restart when stopped in Backoff', async () => {
      const { clock, host, proc } = setup();
      proc.start();
      await clock.advance(0);
      host.last.exit({ code: 1, signal: null });
      await clock.advance(0);
      await proc.stop();
      await clock.advance(600_000);
      expect(proc.state).toBe('Stopped');
      expect(host.spawned).toHaveLength(1);
    });

    it('stops a process that was still being spawned as soon as it exists', async () => {
      const { clock, host, proc } = setup();
      proc.start();
      const stopped = proc.stop();
      await clock.advance(0);
      await stopped;
      expect(host.signals).toEqual([{ pgid: host.last.pid, signal: 'SIGTERM' }]);
      expect(proc.state).toBe('Stopped');
    });
  });

  describe('health', () => {
    function probing(results: boolean[]) {
      let i = 0;
      return async (): Promise<ProbeResult> => {
        const healthy = results[Math.min(i++, results.length - 1)];
        return { healthy, detail: healthy ? 'HTTP 200' : 'ECONNREFUSED' };
      };
    }
    const health = { probe: { kind: 'http' as const, url: 'http://127.0.0.1:8000/health' }, intervalMs: 1_000 };

    it('is Running until the probe passes, then Ready', async () => {
      const { clock, proc } = setup({ health }, { probe: probing([false, false, true]) });
      proc.start();
      await clock.advance(0);
      expect(proc.state).toBe('Running');
      await clock.advance(1_000);
      expect(proc.state).toBe('Running');
      await clock.advance(1_000);
      expect(proc.status()).toMatchObject({ state: 'Ready', healthy: true });
    });

    it('goes back to Running after failureThreshold failed probes', async () => {
      const { clock, proc } = setup({ health: { ...health, failureThreshold: 2 } }, { probe: probing([true, false, false, true]) });
      proc.start();
      await clock.advance(0);
      expect(proc.state).toBe('Ready');
      await clock.advance(1_000);
      expect(proc.state).toBe('Ready');
      await clock.advance(1_000);
      expect(proc.status()).toMatchObject({ state: 'Running', healthy: false });
      await clock.advance(1_000);
      expect(proc.state).toBe('Ready');
    });

    it('restarts a process that fails restartAfterFailures probes once it was ready', async () => {
      const { clock, host, proc } = setup({ health: { ...health, restartAfterFailures: 3 } }, { probe: probing([true, false, false, false]) });
      proc.start();
      await clock.advance(0);
      await clock.advance(3_000);
      expect(host.signals).toEqual([{ pgid: 1000, signal: 'SIGTERM' }]);
      expect(proc.status()).toMatchObject({ state: 'Backoff', lastExit: { reason: 'killed by SIGTERM (restarted: failing its health probe)' } });
    });

    it('stops probing once ready with untilReady', async () => {
      let probes = 0;
      const { clock, proc } = setup({ health: { ...health, untilReady: true } }, { probe: async () => ({ healthy: ++probes >= 2, detail: 'x' }) });
      proc.start();
      await clock.advance(10_000);
      expect(probes).toBe(2);
      expect(proc.state).toBe('Ready');
    });

    it('does not restart an unhealthy process that was never ready (it may still be loading)', async () => {
      const { clock, host, proc } = setup({ health: { ...health, restartAfterFailures: 3 } }, { probe: probing([false]) });
      proc.start();
      await clock.advance(10_000);
      expect(host.signals).toEqual([]);
      expect(proc.state).toBe('Running');
    });
  });

  describe('adoption', () => {
    it('supervises an existing process without starting one', async () => {
      const { clock, host, proc, events } = setup();
      proc.adopt(4242, 987654);
      await clock.advance(0);
      expect(host.spawned).toHaveLength(0);
      expect(proc.status()).toMatchObject({ state: 'Ready', pid: 4242, startTime: 987654, adopted: true });
      expect(events).toContainEqual(expect.objectContaining({ type: 'started', pid: 4242, adopted: true }));
    });

    it('restarts an adopted process that vanished as its own child (exit status unknown counts as a failure)', async () => {
      const { clock, host, proc } = setup();
      proc.adopt(4242, 987654);
      host.attached[0].exit({ code: null, signal: null, statusUnknown: true });
      await clock.advance(0);
      expect(proc.state).toBe('Backoff');
      await clock.advance(1_000);
      expect(host.spawned).toHaveLength(1);
      expect(proc.status()).toMatchObject({ state: 'Ready', adopted: false, restarts: 1 });
    });

    it('stops an adopted process through its process group', async () => {
      const { clock, host, proc } = setup();
      proc.adopt(4242, 987654);
      const stopped = proc.stop(1_000);
      await clock.advance(0);
      await stopped;
      expect(host.signals[0]).toEqual({ pgid: 4242, signal: 'SIGTERM' });
    });

    it('detach leaves the process running and the supervisor inert', async () => {
      const { clock, host, proc } = setup({ health: { probe: { kind: 'tcp', port: 1 } } }, { probe: async () => ({ healthy: true, detail: 'ok' }) });
      proc.start();
      await clock.advance(0);
      proc.detach();
      expect(host.last.released).toBe(true);
      host.last.exit({ code: 1, signal: null });
      await clock.advance(600_000);
      expect(host.spawned).toHaveLength(1);
      expect(host.signals).toEqual([]);
      expect(clock.pending()).toEqual([]);
    });
  });
});

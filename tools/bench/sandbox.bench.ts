// Pod sandbox benchmark (issue 13): how much a bwrap sandbox (namespaces, read-only system, its
// own uid via setpriv) and cgroup limits add to a pod's start, against the same pod unconfined.
//
//   npm run bench -- sandbox [--runs 30] [--warmup 3]
//
// Two pods, each started `--runs` times per form, the forms interleaved (A B C, B C A, …) so
// machine noise hits all of them:
//   exit:   /bin/true, from SupervisedProcess.start() to its exit: the pure cost of starting.
//   server: a node HTTP server, from start() to Ready (a TCP probe every 5 ms passes): a pod start
//           as the node runtime sees it, with a program that takes time to start itself.
// Forms: plain (today's unsandboxed pod), sandbox (bwrap + setpriv), sandbox+cgroups (also a
// memory, CPU and pids cgroup, what a pod with a request gets). Figures are medians and p90s.
//
// Ends with: sandbox_start_overhead_ms (server, sandbox+cgroups median − plain median; the goal
// is under 50), sandbox_exit_overhead_ms (the same for /bin/true) and sandbox_server_start_ms.
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@gpufleet/process-kit';
import { detectCgroups, detectSandbox, SupervisedProcess, type ProcessSpec } from '@gpufleet/process-runtime';
import { positiveIntOptions } from './support/options';

type Form = 'plain' | 'sandbox' | 'sandbox+cgroups';
const FORMS: readonly Form[] = ['plain', 'sandbox', 'sandbox+cgroups'];
const UID = 264_001;
/** Every form gets the environment a sandbox gives (PATH only): what the bench runs in (npm's variables, NODE_OPTIONS) must not tell the forms apart. */
const SAME_ENV = { baseEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' } };

export async function run(args: string[]): Promise<void> {
  const { runs, warmup } = positiveIntOptions(args, { runs: 30, warmup: 3 });
  const support = detectSandbox();
  if (!support.supported) throw new Error(`this host cannot sandbox pods: ${support.reason}`);
  const cgroups = detectCgroups();
  if (!cgroups) throw new Error('no cgroup hierarchy with memory, cpu and pids under /sys/fs/cgroup');
  console.log(`sandbox: ${support.detail}; cgroup ${cgroups.version}; ${runs} runs per form and pod (${warmup} warm-up)`);

  const dir = mkdtempSync(join(tmpdir(), 'gpufleet-bench-sandbox-'));
  try {
    const work = join(dir, 'state', 'pods', 'p', 'work');
    mkdirSync(work, { recursive: true });
    chownSync(work, UID, UID);
    const spec = (form: Form, base: Omit<ProcessSpec, 'id'>): ProcessSpec => ({
      id: 'bench/p',
      cwd: work,
      restart: 'never',
      ...base,
      ...(form === 'plain' ? {} : { sandbox: { uid: UID, gid: UID, writable: [work], hidden: [join(dir, 'state')], devices: [] } }),
      ...(form === 'sandbox+cgroups' ? { limits: { memoryBytes: 512 << 20, cpuMillis: 2000, pids: 1024 } } : {}),
    });
    const pods = {
      exit: async (form: Form) => {
        const p = new SupervisedProcess(spec(form, { command: '/bin/true' }), SAME_ENV);
        const t0 = performance.now();
        p.start();
        await p.waitForState(['Stopped', 'Failed'], 10_000);
        const ms = performance.now() - t0;
        if (p.status().lastExit?.code !== 0) throw new Error(`${form}: /bin/true ${p.status().lastExit?.reason}`);
        return ms;
      },
      server: async (form: Form) => {
        const port = await freePort();
        const p = new SupervisedProcess(
          spec(form, {
            command: process.execPath,
            args: ['-e', `require('http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`],
            health: { probe: { kind: 'tcp', port, host: '127.0.0.1' }, intervalMs: 5, timeoutMs: 1_000, untilReady: true },
            stopGraceMs: 2_000,
          }),
          SAME_ENV,
        );
        const t0 = performance.now();
        p.start();
        await p.waitForState('Ready', 20_000);
        const ms = performance.now() - t0;
        await p.stop(2_000);
        return ms;
      },
    };
    const results: Record<string, Record<Form, number[]>> = {};
    for (const [name, start] of Object.entries(pods)) {
      results[name] = { plain: [], sandbox: [], 'sandbox+cgroups': [] };
      for (let i = 0; i < warmup + runs; i++) {
        for (let j = 0; j < FORMS.length; j++) {
          const form = FORMS[(i + j) % FORMS.length];
          const ms = await start(form);
          if (i >= warmup) results[name][form].push(ms);
        }
      }
    }

    console.log('\npod     form               median ms   p90 ms   vs plain');
    for (const [name, byForm] of Object.entries(results)) {
      const plain = median(byForm.plain);
      for (const form of FORMS) {
        const m = median(byForm[form]);
        console.log(`${name.padEnd(8)}${form.padEnd(19)}${m.toFixed(1).padStart(9)}${p90(byForm[form]).toFixed(1).padStart(9)}   ${form === 'plain' ? '' : `+${(m - plain).toFixed(1)} ms`}`);
      }
    }
    const overhead = (name: string) => median(results[name]['sandbox+cgroups']) - median(results[name].plain);
    console.log('');
    console.log(`sandbox_start_overhead_ms: ${overhead('server').toFixed(1)}`);
    console.log(`sandbox_exit_overhead_ms: ${overhead('exit').toFixed(1)}`);
    console.log(`sandbox_server_start_ms: ${median(results.server['sandbox+cgroups']).toFixed(1)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function p90(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.9) - 1)];
}

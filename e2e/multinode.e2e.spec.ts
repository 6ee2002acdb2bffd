import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { waitFor } from '@gpufleet/testing';
import { REPO_ROOT } from './support/services';
import { UpProcess, gpufleet } from './support/cli';
import { agentPidOf, environOf } from './support/processes';

/**
 * A model bigger than a node on `gpufleet up`: one replica of two 8×H100 pods forms one engine
 * group (engine-sim ranks 0 and 1, the real vLLM-over-Ray command lines carried beside them),
 * is served by its leader alone, restarts as a whole when a worker dies, and moves as a whole
 * when a node is lost. The fleet is two racks of two 8×H100 nodes (examples/fleets/multinode.yaml).
 */

interface Replica {
  ordinal?: number;
  state: string;
  node: string;
  endpoint: string;
  acceleratorIds: string[];
  restarts?: number;
  workload: string;
}
interface DeploymentJson {
  spec: { name: string };
  status?: { phase?: string; replicas?: Replica[]; endpoints?: string[] };
}
interface GroupProcess {
  pid: number;
  rank: number;
  cmdline: string;
  env: Record<string, string>;
}

const FLEET = join(REPO_ROOT, 'examples/fleets/multinode.yaml');
const RESCHEDULE_AFTER_S = 3;
const home = mkdtempSync(join(tmpdir(), 'gpufleet-multinode-'));
const at = ['--home', home];
const ns = ['-n', 'team-a'];
const MODEL = 'llama-3.1-405b';
/** Quota for all 32 H100s of the fleet: a replica holds 16, and a moved gang briefly 16 more. */
const QUEUES = `kind: ClusterQueue
name: h100
pool: h100-80gb-hbm3-x86-64
nominalQuota: 51200000
---
kind: LocalQueue
namespace: team-a
name: default
clusterQueue: h100
`;

async function deployment(): Promise<DeploymentJson> {
  const res = await gpufleet(['get', 'deployments', 'big', ...ns, '-o', 'json', ...at]);
  if (res.code !== 0) throw new Error(res.stderr);
  return JSON.parse(res.stdout) as DeploymentJson;
}

async function readyReplica(what: string, accept: (r: Replica) => boolean = () => true): Promise<Replica> {
  let last: DeploymentJson | undefined;
  await waitFor(
    what,
    async () => {
      last = await deployment();
      const r = last.status?.replicas?.[0];
      return (last.status?.phase === 'DEPLOYMENT_PHASE_READY' && r && accept(r)) || undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}\nlast status: ${JSON.stringify(last, null, 1)}`);
  });
  return last!.status!.replicas![0];
}

/** The engine processes of a replica's workload, by rank (GPUFLEET_POD ends in the pod index). */
function groupProcesses(workload: string): GroupProcess[] {
  const found: GroupProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = environOf(Number(entry));
      const pod = env.GPUFLEET_POD ?? '';
      if (!pod.startsWith(`team-a/${workload}/`)) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      // The engine itself, not the sandbox (bwrap) that holds it.
      if (!/(^|\/)node$/.test(argv[0]) || !argv.some((a) => a.includes('engine-sim'))) continue;
      const cmdline = argv.join(' ');
      found.push({ pid: Number(entry), rank: Number(pod.split('/').pop()), cmdline, env });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found.sort((a, b) => a.rank - b.rank);
}

async function completionThroughRouter(base: string): Promise<void> {
  const res = await waitFor(
    'the router to route to the group',
    async () => {
      const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, prompt: 'The capital of France is', max_tokens: 4 }) });
      return r.status === 200 ? r : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 250 },
  );
  const body = (await res.json()) as { object: string; usage: { completion_tokens: number } };
  expect(body.object).toBe('text_completion');
  expect(body.usage.completion_tokens).toBe(4);
}

describe('a multi-node replica (two 8×H100 pods) on `gpufleet up`', () => {
  const up = new UpProcess([
    ...at,
    '--fleet',
    FLEET,
    '--nats-port',
    '0',
    '--redis-port',
    '0',
    '--router-port',
    '0',
    '--scheduler-port',
    '0',
    '--scheduler-http-port',
    '0',
    '--heartbeat-interval',
    '1',
    '--not-ready-timeout',
    '2',
    '--reschedule-after',
    String(RESCHEDULE_AFTER_S),
    // A process per node, so that stopping one agent takes exactly one node away.
    '--nodes-per-process',
    '1',
  ]);
  let router = '';
  let first: Replica;

  afterAll(async () => {
    await up.stop();
  });

  it('comes up as one group behind the leader’s endpoint, with every pod running vLLM’s Ray form, and answers through the router', async () => {
    await up.waitUp();
    router = (JSON.parse(readFileSync(join(home, 'context.json'), 'utf8')) as { router: string }).router;
    const queues = join(home, 'queues.yaml');
    writeFileSync(queues, QUEUES);
    const submitted = await gpufleet(['submit', '-f', queues, ...at]);
    expect(submitted.stderr).toBe('');
    const deployed = await gpufleet(['deploy', `/models/${MODEL}`, '--name', 'big', ...ns, '--size', '2', '--topology', 'rack', '--instance-type', 'h100-80gb-hbm3-x86-64.8x', ...at]);
    expect(deployed.stderr).toBe('');

    first = await readyReplica('the group Ready');
    expect(first.acceleratorIds).toHaveLength(16);
    const status = (await deployment()).status!;
    expect(status.endpoints).toEqual([first.endpoint]);

    const [leader, worker] = groupProcesses(first.workload);
    expect([leader?.rank, worker?.rank]).toEqual([0, 1]);
    const rendezvous = /--dist-init-addr (127\.0\.0\.1:\d+)/.exec(leader.cmdline)?.[1];
    expect(rendezvous).toBeDefined();
    expect(leader.cmdline).toContain(`--tensor-parallel-size 8 --pipeline-parallel-size 2 --nnodes 2 --node-rank 0 --dist-init-addr ${rendezvous}`);
    expect(worker.cmdline).toContain(`--nnodes 2 --node-rank 1 --dist-init-addr ${rendezvous}`);
    expect(leader.cmdline).toContain(`--port ${new URL(first.endpoint).port}`);

    // What a real fleet would run for each rank: docs/engines.md, vLLM over Ray.
    const port = rendezvous!.split(':')[1];
    const [shell, dashC, script] = JSON.parse(leader.env.GPUFLEET_ENGINE_COMMAND) as string[];
    expect([shell, dashC]).toEqual(['/bin/sh', '-c']);
    expect(script).toMatch(
      new RegExp(
        `^ray start --head --node-ip-address=127\\.0\\.0\\.1 --port=${port} --num-gpus=8 --disable-usage-stats && exec vllm serve /models/${MODEL} .*` +
          '--tensor-parallel-size 8 --pipeline-parallel-size 2 --distributed-executor-backend ray ',
      ),
    );
    expect(JSON.parse(worker.env.GPUFLEET_ENGINE_COMMAND)).toEqual(['ray', 'start', '--block', `--address=127.0.0.1:${port}`, '--node-ip-address=127.0.0.1', '--num-gpus=8', '--disable-usage-stats']);
    for (const p of [leader, worker]) {
      expect(p.env.VLLM_HOST_IP).toBe('127.0.0.1');
      expect(p.env.NCCL_IB_HCA).toMatch(/^mlx5_\d+:1(,mlx5_\d+:1)*$/);
      expect(p.env.CUDA_VISIBLE_DEVICES.split(',')).toHaveLength(8);
    }

    await completionThroughRouter(router);
  });

  it('restarts the whole group when its worker dies', async () => {
    const [leader, worker] = groupProcesses(first.workload);
    process.kill(worker.pid, 'SIGKILL');
    const again = await readyReplica('the group Ready again after a restart', (r) => (r.restarts ?? 0) >= 2);
    expect(again.workload).toBe(first.workload);
    const [leader2, worker2] = groupProcesses(first.workload);
    // The leader could not go on without rank 1: it exited and was restarted too.
    expect(leader2.pid).not.toBe(leader.pid);
    expect(worker2.pid).not.toBe(worker.pid);
    await completionThroughRouter(router);
  });

  it('moves the whole gang when a node is lost', async () => {
    const before = (await deployment()).status!.replicas![0];
    const lost = before.node;
    process.kill(agentPidOf(up.child.pid!, lost), 'SIGTERM');
    const moved = await readyReplica('the gang moved and Ready', (r) => r.workload !== before.workload);
    const placed = groupProcesses(moved.workload);
    expect(placed.map((p) => p.rank)).toEqual([0, 1]);
    expect(moved.node).not.toBe(lost);
    await completionThroughRouter(router);
  });
});

import { DeploymentPhase, Workload, WorkloadPhase, type PodRuntimeStatus } from '@gpufleet/contracts';
import { planDeployment, type DeploymentPlanInput } from './deployment-plan';
import { replicaWorkloadSpec } from './replica-workload';
import type { NodeView } from './replica-state';
import { admitted, context, deployment, deploymentSpec, H100_POOL, pending, pod } from './__fixtures__/records';

const NOW = 10_000_000;
const resources = context.resolveInstanceType(`${H100_POOL}.1x`)!.resources;

function replica(spec = deploymentSpec(), ordinal = 0, suffix = `x${ordinal}`) {
  return replicaWorkloadSpec(spec, spec.roles[0], ordinal, resources, suffix);
}

function input(d = deployment(), workloads: Workload[] = [], pods: PodRuntimeStatus[] = [], nodes: Record<string, NodeView> = {}): DeploymentPlanInput {
  return {
    deployment: d,
    workloads,
    podsOf: (w) => pods.filter((p) => p.workload === w),
    nodeOf: (n) => nodes[n] ?? { ready: true },
    now: NOW,
    rescheduleAfterMs: 300_000,
  };
}

describe('planDeployment', () => {
  it('creates one workload per replica of a new deployment, which starts as Starting', () => {
    const plan = planDeployment(input());
    expect(plan.create).toEqual([
      { role: 'server', ordinal: 0 },
      { role: 'server', ordinal: 1 },
    ]);
    expect(plan.status.phase).toBe(DeploymentPhase.DEPLOYMENT_PHASE_STARTING);
    expect(plan.status.replicas.map((r) => r.state)).toEqual(['Pending', 'Pending']);
  });

  it('gives each replica workload the engine template, owner labels and the role’s resources', () => {
    const w = replica(deploymentSpec(), 1, 'abcde');
    expect(w.name).toBe('llama-s1-abcde');
    expect(w.labels).toMatchObject({ 'gpufleet.io/deployment': 'llama', 'gpufleet.io/role': 'server', 'gpufleet.io/ordinal': '1' });
    expect(w.podSets).toEqual([expect.objectContaining({ name: 'server', count: 1, size: 1, resources })]);
    expect(w.template?.engine).toMatchObject({ deployment: 'llama', role: 'server', ordinal: 1, model: '/models/llama-3.1-8b', servedModelName: 'llama-3.1-8b' });
  });

  it('is Ready with both endpoints once every replica’s pod is Ready', () => {
    const ws = [admitted(replica(deploymentSpec(), 0), 'h100-0'), admitted(replica(deploymentSpec(), 1), 'h100-1', ['nvidia-3'])];
    const plan = planDeployment(input(deployment(), ws, [pod(ws[0], 'Ready', 41_000), pod(ws[1], 'Ready', 41_001)]));
    expect(plan.create).toEqual([]);
    expect(plan.delete).toEqual([]);
    expect(plan.status.phase).toBe(DeploymentPhase.DEPLOYMENT_PHASE_READY);
    expect(plan.status.readyReplicas).toBe(2);
    expect(plan.status.endpoints).toEqual(['http://127.0.0.1:41000', 'http://127.0.0.1:41001']);
    expect(plan.status.replicas[1]).toMatchObject({ node: 'h100-1', acceleratorIds: ['nvidia-3'], logsUrl: 'http://127.0.0.1:9100/v1/pods/team-a/llama-s1-x1/server/0/0/logs' });
    expect(plan.status.conditions.find((c) => c.type === 'Available')?.status).toBe(true);
  });

  it('is Degraded while a replica’s engine is in restart backoff, and says why', () => {
    const ws = [admitted(replica(deploymentSpec(), 0), 'h100-0'), admitted(replica(deploymentSpec(), 1), 'h100-0')];
    const plan = planDeployment(input(deployment(), ws, [pod(ws[0], 'Ready'), pod(ws[1], 'Backoff', 41_001, { lastExit: 'killed by SIGKILL', restarts: 1 })]));
    expect(plan.status.phase).toBe(DeploymentPhase.DEPLOYMENT_PHASE_DEGRADED);
    expect(plan.status.replicas[1]).toMatchObject({ state: 'Restarting', message: 'restarting after it killed by SIGKILL (restart 1)' });
    expect(plan.create).toEqual([]);
  });

  it('scales down by deleting the highest ordinals', () => {
    const spec = deploymentSpec({ roles: [{ ...deploymentSpec().roles[0], replicas: 1 }] });
    const ws = [0, 1, 2].map((i) => admitted(replica(deploymentSpec(), i), 'h100-0'));
    const plan = planDeployment(input(deployment(spec), ws, ws.map((w) => pod(w, 'Ready'))));
    expect(plan.delete.map((d) => d.workload)).toEqual(['llama-s1-x1', 'llama-s2-x2']);
    expect(plan.create).toEqual([]);
  });

  it('rolls an update one replica at a time, lowest ordinal first', () => {
    const old = [0, 1].map((i) => admitted(replica(deploymentSpec(), i), 'h100-0'));
    const updatedSpec = deploymentSpec({ engine: { engine: 'vllm', version: '', mode: 'latency', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} } });
    const first = planDeployment(input(deployment(updatedSpec, { generation: 2 }), old, old.map((w) => pod(w, 'Ready'))));
    expect(first.delete.map((d) => d.workload)).toEqual(['llama-s0-x0']);
    expect(first.create).toEqual([{ role: 'server', ordinal: 0 }]);

    // The replacement is placed but not Ready yet: the other old replica keeps serving.
    const fresh = admitted(replica(updatedSpec, 0, 'new00'), 'h100-1');
    const second = planDeployment(input(deployment(updatedSpec, { generation: 2 }), [fresh, old[1]], [pod(fresh, 'Starting'), pod(old[1], 'Ready')]));
    expect(second.delete).toEqual([]);
    expect(second.create).toEqual([]);
    expect(second.status.phase).toBe(DeploymentPhase.DEPLOYMENT_PHASE_STARTING);

    const third = planDeployment(input(deployment(updatedSpec, { generation: 2 }), [fresh, old[1]], [pod(fresh, 'Ready'), pod(old[1], 'Ready')]));
    expect(third.delete.map((d) => d.workload)).toEqual(['llama-s1-x1']);
    expect(third.create).toEqual([{ role: 'server', ordinal: 1 }]);
  });

  it('does not restart replicas for a change of replica count alone', () => {
    const ws = [admitted(replica(deploymentSpec(), 0), 'h100-0')];
    const spec = deploymentSpec({ roles: [{ ...deploymentSpec().roles[0], replicas: 1 }] });
    const plan = planDeployment(input(deployment(spec, { generation: 3 }), ws, [pod(ws[0], 'Ready')]));
    expect(plan.delete).toEqual([]);
    expect(plan.status.phase).toBe(DeploymentPhase.DEPLOYMENT_PHASE_READY);
  });

  it('waits out the timeout for a replica on a NotReady node, then moves it', () => {
    const ws = [admitted(replica(deploymentSpec(), 0), 'h100-0'), admitted(replica(deploymentSpec(), 1), 'h100-1')];
    const pods = ws.map((w) => pod(w, 'Ready'));
    const lostSince = (ms: number) => ({ 'h100-0': { ready: false, since: new Date(NOW - ms) } });
    const early = planDeployment(input(deployment(), ws, pods, lostSince(60_000)));
    expect(early.delete).toEqual([]);
    expect(early.status.phase).toBe(DeploymentPhase.DEPLOYMENT_PHASE_DEGRADED);
    expect(early.status.replicas[0]).toMatchObject({ state: 'Lost', node: 'h100-0' });
    expect(early.status.replicas[0].message).toMatch(/moved elsewhere in 240s unless it returns/);

    const late = planDeployment(input(deployment(), ws, pods, lostSince(300_000)));
    expect(late.delete.map((d) => d.workload)).toEqual(['llama-s0-x0']);
    expect(late.create).toEqual([{ role: 'server', ordinal: 0 }]);
  });

  it('moves a replica off a drained node at once, and keeps one whose pod still runs on a cordoned node', () => {
    const ws = [admitted(replica(deploymentSpec(), 0), 'h100-0'), admitted(replica(deploymentSpec(), 1), 'h100-1')];
    const cordoned = { 'h100-0': { ready: true, cordoned: 'Kubernetes Node h100-0 is not schedulable: cordoned' } };
    // Cordoned only: its pod keeps running there.
    const kept = planDeployment(input(deployment(), ws, ws.map((w) => pod(w, 'Ready')), cordoned));
    expect(kept.delete).toEqual([]);
    // Drained: the pod was evicted and the runtime starts none there.
    const drained = planDeployment(input(deployment(), ws, [pod(ws[1], 'Ready')], cordoned));
    expect(drained.delete).toEqual([{ workload: 'llama-s0-x0', reason: 'node h100-0 is drained (Kubernetes Node h100-0 is not schedulable: cordoned) and the pod there is gone; moving to another node' }]);
    expect(drained.create).toEqual([{ role: 'server', ordinal: 0 }]);
  });

  it('replaces a replica whose workload finished (e.g. preempted)', () => {
    const w = admitted(replica(deploymentSpec(), 0), 'h100-0');
    w.status!.phase = WorkloadPhase.WORKLOAD_PHASE_FINISHED;
    w.status!.finishReason = 'Preempted';
    const plan = planDeployment(input(deployment(deploymentSpec({ roles: [{ ...deploymentSpec().roles[0], replicas: 1 }] })), [w]));
    expect(plan.delete).toEqual([{ workload: 'llama-s0-x0', reason: 'its workload finished (Preempted)' }]);
    expect(plan.create).toEqual([{ role: 'server', ordinal: 0 }]);
  });

  it('keeps one workload per ordinal, the ready one, after an interrupted replacement', () => {
    const a = admitted(replica(deploymentSpec(), 0, 'aaaaa'), 'h100-0', ['nvidia-0'], new Date(1));
    const b = pending(replica(deploymentSpec(), 0, 'bbbbb'));
    const spec = deploymentSpec({ roles: [{ ...deploymentSpec().roles[0], replicas: 1 }] });
    const plan = planDeployment(input(deployment(spec), [a, b], [pod(a, 'Ready')]));
    expect(plan.delete.map((d) => d.workload)).toEqual(['llama-s0-bbbbb']);
    expect(plan.create).toEqual([]);
  });

  it('deletes every replica of a deployment being deleted, and the record once none is left', () => {
    const ws = [admitted(replica(deploymentSpec(), 0), 'h100-0')];
    const deleting = deployment(deploymentSpec(), { deletionRequestedAt: new Date(NOW) });
    const plan = planDeployment(input(deleting, ws, [pod(ws[0], 'Ready')]));
    expect(plan.delete.map((d) => d.workload)).toEqual(['llama-s0-x0']);
    expect(plan.removeRecord).toBe(false);
    expect(plan.status.phase).toBe(DeploymentPhase.DEPLOYMENT_PHASE_DELETING);
    expect(planDeployment(input(deleting, [])).removeRecord).toBe(true);
  });

  it('shows why a replica waits for admission', () => {
    const w = pending(replica(deploymentSpec(), 0));
    w.status!.pending = { gates: [{ gate: 'Quota', passed: false, reason: 'QuotaExceeded', message: 'needs 1,600,000 credits, 0 left' }], queuePosition: 1, largestFreeBlock: '' };
    const plan = planDeployment(input(deployment(deploymentSpec({ roles: [{ ...deploymentSpec().roles[0], replicas: 1 }] })), [w]));
    expect(plan.status.replicas[0]).toMatchObject({ state: 'Pending', message: 'Quota: needs 1,600,000 credits, 0 left' });
  });

  describe('a multi-node replica (one workload, a gang of two pods)', () => {
    const spec = deploymentSpec({ roles: [{ ...deploymentSpec().roles[0], replicas: 1, size: 2 }] });
    const gang = (): Workload => {
      const w = admitted(replica(spec, 0), 'h100-0');
      w.status!.placements.push({ ...w.status!.placements[0], pod: 1, node: 'h100-1', acceleratorIds: ['nvidia-0'] });
      return w;
    };
    const leader = (w: Workload, state: string) => pod(w, state, 41_000, { groupRole: 'leader', groupPort: 41_100 });
    const worker = (w: Workload, state: string, extra: Partial<PodRuntimeStatus> = {}) => pod(w, state, 41_001, { node: 'h100-1', pod: 1, groupRole: 'worker', ...extra });

    it('is Starting until every pod is Ready, then Ready behind the leader’s endpoint alone', () => {
      const w = gang();
      const starting = planDeployment(input(deployment(spec), [w], [leader(w, 'Running'), worker(w, 'Ready')]));
      expect(starting.status.replicas[0]).toMatchObject({ state: 'Starting', message: '1/2 pods ready' });
      const ready = planDeployment(input(deployment(spec), [w], [worker(w, 'Ready'), leader(w, 'Ready')]));
      expect(ready.status.phase).toBe(DeploymentPhase.DEPLOYMENT_PHASE_READY);
      expect(ready.status.replicas[0]).toMatchObject({ endpoint: 'http://127.0.0.1:41000', node: 'h100-0' });
      expect(ready.status.endpoints).toEqual(['http://127.0.0.1:41000']);
    });

    it('is Restarting while its worker is in backoff, and counts the restarts of every pod', () => {
      const w = gang();
      const plan = planDeployment(input(deployment(spec), [w], [leader(w, 'Backoff'), worker(w, 'Backoff', { restarts: 1, lastExit: 'killed by SIGKILL' })].map((p) => ({ ...p, restarts: 1 }))));
      expect(plan.status.replicas[0]).toMatchObject({ state: 'Restarting', restarts: 2 });
      expect(plan.status.endpoints).toEqual([]);
    });

    it('moves as a whole when the node of its worker is lost: the one workload goes, a new one is created', () => {
      const w = gang();
      const plan = planDeployment(input(deployment(spec), [w], [leader(w, 'Ready')], { 'h100-1': { ready: false, since: new Date(NOW - 400_000) } }));
      expect(plan.delete).toEqual([{ workload: w.spec!.name, reason: expect.stringContaining('node h100-1 is NotReady') }]);
      expect(plan.create).toEqual([{ role: 'server', ordinal: 0 }]);
    });
  });
});

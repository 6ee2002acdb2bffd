import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { NodeLedger, Workload, WorkloadPhase, WorkloadSpec, WorkloadStatus, type NodeInventory } from '@gpufleet/contracts';
import { context, enginePod, inventory } from './__fixtures__/pods';
import { desiredKubePods, desiredObjects } from './desired';
import { groupRestartsOf } from './group-restart';
import { KubeLabels } from './names';
import { podManifestOf, type KubeDesiredPod } from './pod-manifest';
import { podStatusOf } from './pod-status';
import { inWorkloadNamespace } from './workload-namespace';

const env = (c: V1Container): Record<string, unknown> => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));

/** h100-0 with one active RDMA port (mlx5_0 on ib0) and one that is down. */
function rdmaNode(): NodeInventory {
  const inv = inventory();
  inv.nics = [
    { name: 'mlx5_0', port: 1, linkLayer: 'InfiniBand', state: 'ACTIVE', numaNode: 0, netdev: 'ib0' },
    { name: 'mlx5_1', port: 1, linkLayer: 'InfiniBand', state: 'DOWN', numaNode: 0, netdev: 'ib1' },
  ];
  return inv;
}

/** Pod `pod` of a two-pod replica of 2 GPUs each, on h100-0 (the fixture's node). */
function member(pod: number, engine: Partial<NonNullable<ReturnType<typeof enginePod>['template']['engine']>['engine']> = {}): KubeDesiredPod {
  const base = enginePod({ ref: { pod } });
  const run = { engine: { ...base.template.engine!.engine!, ...engine } };
  return { ...enginePod({ ref: { pod }, run }), group: { size: 2, nvlinkAcrossPods: false } };
}

const LEADER_DNS = 'llama-s0-bcdfg-server-0-0.llama-s0-bcdfg-server-0-group.team-a.svc';

describe('podManifestOf: a pod of a multi-node replica', () => {
  const ctx = context({}, rdmaNode());
  const leader = podManifestOf(member(0), ctx);
  const worker = podManifestOf(member(1), ctx);

  it('is reachable at <pod>.<group Service>.<namespace>.svc: hostname and subdomain set', () => {
    expect([leader.spec!.hostname, leader.spec!.subdomain]).toEqual(['llama-s0-bcdfg-server-0-0', 'llama-s0-bcdfg-server-0-group']);
    expect([worker.spec!.hostname, worker.spec!.subdomain]).toEqual(['llama-s0-bcdfg-server-0-1', 'llama-s0-bcdfg-server-0-group']);
  });

  it('the leader runs the Ray head on its Pod IP and vllm serve over the whole gang, and serves the endpoint', () => {
    const c = leader.spec!.containers[0];
    expect([...c.command!, ...c.args!]).toEqual([
      '/bin/sh',
      '-c',
      "ray start --head '--node-ip-address=$(GPUFLEET_POD_IP)' --port=29500 --num-gpus=2 --disable-usage-stats && exec vllm serve /models/llama-3.1-8b --served-model-name llama --host 0.0.0.0 --port 8000 --tensor-parallel-size 2 --pipeline-parallel-size 2 --distributed-executor-backend ray --max-num-seqs 256 --gpu-memory-utilization 0.92 --enable-chunked-prefill --max-num-batched-tokens 8192",
    ]);
    expect(c.ports).toEqual([
      { name: 'http', containerPort: 8000, protocol: 'TCP' },
      { name: 'rendezvous', containerPort: 29500, protocol: 'TCP' },
    ]);
    expect(c.readinessProbe!.httpGet).toEqual({ path: '/health', port: 'http' });
    expect(leader.metadata!.labels).toMatchObject({ [KubeLabels.groupRole]: 'leader', [KubeLabels.endpoint]: 'true' });
  });

  it('a worker joins the leader by its DNS name, has no probes, no API port and no endpoint', () => {
    const c = worker.spec!.containers[0];
    expect([...c.command!, ...c.args!]).toEqual(['ray', 'start', '--block', `--address=${LEADER_DNS}:29500`, '--node-ip-address=$(GPUFLEET_POD_IP)', '--num-gpus=2', '--disable-usage-stats']);
    expect(c.ports).toEqual([{ name: 'rendezvous', containerPort: 29500, protocol: 'TCP' }]);
    expect([c.startupProbe, c.readinessProbe, c.livenessProbe]).toEqual([undefined, undefined, undefined]);
    expect(worker.metadata!.labels![KubeLabels.groupRole]).toBe('worker');
    expect(worker.metadata!.labels).not.toHaveProperty(KubeLabels.endpoint);
  });

  it('takes the Pod IP from the downward API first, so the kubelet expands it, and NCCL/Gloo on the Pod network and the node’s active HCAs', () => {
    const c = worker.spec!.containers[0];
    expect(c.env![0]).toEqual({ name: 'GPUFLEET_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
    expect(env(c)).toMatchObject({ VLLM_HOST_IP: '$(GPUFLEET_POD_IP)', NCCL_SOCKET_IFNAME: 'eth0', GLOO_SOCKET_IFNAME: 'eth0', NCCL_IB_HCA: 'mlx5_0:1' });
    expect(env(podManifestOf(member(1), context({ podInterface: 'net1' }, rdmaNode())).spec!.containers[0]).NCCL_SOCKET_IFNAME).toBe('net1');
  });

  it('SGLang: every rank meets at the leader’s dist-init address; the leader at its own IP', () => {
    const args = (pod: number) => podManifestOf(member(pod, { engine: 'sglang' }), ctx).spec!.containers[0].args!;
    expect(args(0)).toEqual(expect.arrayContaining(['--dist-init-addr', '$(GPUFLEET_POD_IP):29500', '--nnodes', '2', '--node-rank', '0']));
    expect(args(1)).toEqual(expect.arrayContaining(['--dist-init-addr', `${LEADER_DNS}:29500`, '--node-rank', '1']));
  });

  it('TRT-LLM: mpirun on the leader lists itself by IP and each worker by DNS name; a worker runs sshd on the rendezvous port', () => {
    const trt = { engine: 'trtllm', envFromSecret: {}, env: {} };
    const lead = podManifestOf(member(0, trt), ctx).spec!.containers[0];
    expect(lead.command).toEqual(['mpirun']);
    expect(lead.args!.slice(0, 8)).toEqual(['--allow-run-as-root', '-np', '4', '-H', '$(GPUFLEET_POD_IP):2,llama-s0-bcdfg-server-0-1.llama-s0-bcdfg-server-0-group.team-a.svc:2', '--mca', 'plm_rsh_args', '-p 29500']);
    const work = podManifestOf(member(1, trt), ctx).spec!.containers[0];
    expect([...work.command!, ...work.args!]).toEqual(['/usr/sbin/sshd', '-D', '-e', '-p', '29500']);
  });

  it('changes nothing for a single-pod replica', () => {
    const single = podManifestOf(enginePod(), ctx);
    expect(single.spec!.hostname).toBeUndefined();
    expect(single.spec!.containers[0].env!.map((e) => e.name)).not.toContain('GPUFLEET_POD_IP');
    expect(single.metadata!.labels).not.toHaveProperty(KubeLabels.groupRole);
  });
});

describe('desiredKubePods and desiredObjects for a multi-node replica', () => {
  const template = enginePod().template;
  const workload = Workload.fromPartial({
    spec: WorkloadSpec.fromPartial({
      name: 'llama-s0-bcdfg',
      namespace: 'team-a',
      template,
      podSets: [{ name: 'server', count: 1, size: 2, topology: { requiredLevel: 'nvlink-domain', preferredLevel: '' } }],
    }),
    status: WorkloadStatus.fromPartial({ phase: WorkloadPhase.WORKLOAD_PHASE_ADMITTED }),
  });
  const ledger = NodeLedger.fromPartial({
    node: 'h100-0',
    entries: [0, 1].map((pod) => ({ workload: 'team-a/llama-s0-bcdfg', pod: { podSet: 'server', replica: 0, pod, node: 'h100-0', acceleratorIds: pod === 0 ? ['nvidia-0', 'nvidia-1'] : ['nvidia-2', 'nvidia-3'] } })),
  });
  const pods = desiredKubePods([ledger], new Map([['team-a.llama-s0-bcdfg', workload]]));

  it('gives every pod its group’s size and whether it shares an NVLink domain', () => {
    expect(pods.map((p) => p.group)).toEqual([
      { size: 2, nvlinkAcrossPods: true },
      { size: 2, nvlinkAcrossPods: true },
    ]);
    // Tensor parallel spans both pods in one NVLink domain.
    expect(podManifestOf(pods[0], context()).spec!.containers[0].args![1]).toContain('--tensor-parallel-size 4 --pipeline-parallel-size 1');
  });

  it('makes one headless Service for the replica, owned like its pods', () => {
    const objects = desiredObjects({ pods: pods.map((p) => ({ ...p, owner: { kind: 'ModelDeployment' as const, name: 'llama', uid: 'k1' } })) }, context());
    expect(objects.pods).toHaveLength(2);
    expect(objects.services.map((s) => [s.metadata!.name, s.spec!.clusterIP, s.spec!.ports![0].port, s.metadata!.ownerReferences![0].uid])).toEqual([['llama-s0-bcdfg-server-0-group', 'None', 29500, 'k1']]);
  });

  it('in a shared namespace the Service, the subdomain and the members’ DNS names move together', () => {
    const objects = desiredObjects({ pods }, context());
    const worker = inWorkloadNamespace(objects.pods[1], 'gpufleet');
    const service = inWorkloadNamespace(objects.services[0], 'gpufleet');
    expect(service.metadata!.name).toBe('team-a-llama-s0-bcdfg-server-0-group');
    expect(worker.spec!.subdomain).toBe(service.metadata!.name);
    expect(worker.spec!.hostname).toBe('llama-s0-bcdfg-server-0-1');
    expect(worker.spec!.containers[0].args).toContain('--address=llama-s0-bcdfg-server-0-0.team-a-llama-s0-bcdfg-server-0-group.gpufleet.svc:29500');
    expect(objects.pods[1].spec!.subdomain).toBe('llama-s0-bcdfg-server-0-group');
  });
});

describe('podStatusOf for a group pod', () => {
  it('reports the group role, and the leader’s rendezvous port, as node runtimes do', () => {
    const ctx = context();
    const leader = podStatusOf(podManifestOf(member(0), ctx))!;
    const worker = podStatusOf(podManifestOf(member(1), ctx))!;
    expect([leader.groupRole, leader.groupPort, worker.groupRole, worker.groupPort]).toEqual(['leader', 29500, 'worker', 0]);
  });
});

describe('groupRestartsOf', () => {
  const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
  /** A member's Pod as the kubelet reports it: running since `since`, its engine last exited at `exited`. */
  function observed(pod: number, since: number | undefined, exited?: number, extra: { deleting?: boolean; size?: number } = {}): V1Pod {
    const manifest = podManifestOf({ ...member(pod), group: { size: extra.size ?? 3, nvlinkAcrossPods: false } }, context());
    return {
      ...manifest,
      metadata: { ...manifest.metadata, uid: `uid-${pod}`, ...(extra.deleting ? { deletionTimestamp: t(99) } : {}) },
      spec: { ...manifest.spec!, nodeName: `h100-${pod}` },
      status: {
        phase: 'Running',
        containerStatuses: [
          {
            name: 'engine',
            image: '',
            imageID: '',
            ready: since !== undefined,
            restartCount: exited === undefined ? 0 : 1,
            state: since !== undefined ? { running: { startedAt: t(since) } } : { waiting: { reason: 'CrashLoopBackOff' } },
            ...(exited !== undefined ? { lastState: { terminated: { exitCode: 1, finishedAt: t(exited) } } } : {}),
          },
        ],
      },
    };
  }

  it('a worker that exited after the others started: the leader and the other worker are made again, the worker is left to the kubelet', () => {
    const plan = groupRestartsOf([observed(0, 10), observed(1, 40, 30), observed(2, 12)]);
    expect(plan.map((d) => [d.ref.name, d.ref.uid, d.reason])).toEqual([
      ['llama-s0-bcdfg-server-0-0', 'uid-0', 'GroupRestart'],
      ['llama-s0-bcdfg-server-0-2', 'uid-2', 'GroupRestart'],
    ]);
    expect(plan[0].message).toBe(
      "worker pod 1 on h100-1 exited with code 1 at 2026-01-01T00:00:30.000Z, after this leader's engine started; restarting it: engines cannot re-form around a lost rank",
    );
  });

  it('a worker waiting in CrashLoopBackOff counts too; a leader restarted in place takes its workers along', () => {
    expect(groupRestartsOf([observed(0, 10), observed(1, undefined, 30), observed(2, 12)]).map((d) => d.ref.uid)).toEqual(['uid-0', 'uid-2']);
    expect(groupRestartsOf([observed(0, 50, 45), observed(1, 10), observed(2, 12)]).map((d) => d.ref.uid)).toEqual(['uid-1', 'uid-2']);
  });

  it('leaves a group alone once its members started after the exit, and never counts or deletes terminating Pods', () => {
    expect(groupRestartsOf([observed(0, 35), observed(1, 40, 30), observed(2, 36)])).toEqual([]);
    expect(groupRestartsOf([observed(0, 10, undefined, { deleting: true }), observed(1, 40, 30), observed(2, 12, undefined, { deleting: true })])).toEqual([]);
    expect(groupRestartsOf([observed(0, 10), observed(1, 40, 30, { deleting: true })])).toEqual([]);
  });

  it('keeps replicas of workloads of one name in two gpufleet namespaces apart (a shared workload namespace)', () => {
    const other = observed(1, 40, 30);
    other.metadata = { ...other.metadata, labels: { ...other.metadata!.labels, [KubeLabels.namespace]: 'team-b' } };
    expect(groupRestartsOf([observed(0, 10), other])).toEqual([]);
  });

  it('never touches a single-pod replica', () => {
    const single = podManifestOf(enginePod(), context());
    const crashed: V1Pod = { ...single, status: { containerStatuses: [{ name: 'engine', image: '', imageID: '', ready: true, restartCount: 1, state: { running: { startedAt: t(40) } }, lastState: { terminated: { exitCode: 1, finishedAt: t(30) } } }] } };
    expect(groupRestartsOf([crashed, observed(0, 10)])).toEqual([]);
  });
});

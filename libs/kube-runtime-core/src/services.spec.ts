import fc from 'fast-check';
import { NodeLedger, Workload, WorkloadPhase, WorkloadSpec, WorkloadStatus } from '@gpufleet/contracts';
import { context, enginePod, instancePod } from './__fixtures__/pods';
import { desiredKubePods, desiredObjects } from './desired';
import { deviceResourceOf, migResourceName } from './devices';
import { dnsLabel, KubeLabels } from './names';
import { podNameOf } from './names';
import { groupLeaderAddress } from './pod-manifest';
import { deploymentServiceOf, groupServiceOf, instanceServiceOf } from './services';

describe('deploymentServiceOf', () => {
  it('is a ClusterIP Service named after the deployment, port http, selecting its serving pods of this incarnation', () => {
    const s = deploymentServiceOf({ namespace: 'team-a', name: 'llama', uid: 'uid-llama', owner: { kind: 'ModelDeployment', name: 'llama', uid: 'k1' } });
    expect(s.metadata).toMatchObject({ name: 'llama', namespace: 'team-a', labels: { 'app.kubernetes.io/managed-by': 'gpufleet' } });
    expect(s.metadata!.ownerReferences![0]).toMatchObject({ kind: 'ModelDeployment', uid: 'k1' });
    expect(s.spec).toMatchObject({ type: 'ClusterIP', ports: [{ name: 'http', port: 8000, targetPort: 'http', protocol: 'TCP', appProtocol: 'http' }] });
    expect(s.spec!.selector).toEqual({ 'app.kubernetes.io/managed-by': 'gpufleet', [KubeLabels.deployment]: 'llama', [KubeLabels.endpoint]: 'true', [KubeLabels.ownerUid]: 'uid-llama' });
  });

  it('selects pods the manifests label: pod 0 of server and decode replicas, not prefill', () => {
    const selector = deploymentServiceOf({ namespace: 'team-a', name: 'llama', uid: 'uid-llama' }).spec!.selector!;
    const matches = (labels: Record<string, string>): boolean => Object.entries(selector).every(([k, v]) => labels[k] === v);
    const labelsOf = (role: string, pod: number): Record<string, string> => desiredObjects({ pods: [enginePod({ run: { role }, ref: { pod }, labels: { 'gpufleet.io/role': role } })] }, context()).pods[0].metadata!.labels!;
    expect(matches(labelsOf('server', 0))).toBe(true);
    expect(matches(labelsOf('decode', 0))).toBe(true);
    expect(matches(labelsOf('prefill', 0))).toBe(false);
    expect(matches(labelsOf('server', 1))).toBe(false);
  });
});

describe('groupServiceOf', () => {
  const group = { namespace: 'team-a', workload: 'big-s0-abcde', podSet: 'server', replica: 0, rendezvousPort: 29500 };

  it('is a headless Service over every pod of one multi-node replica, published before they are ready', () => {
    const s = groupServiceOf(group);
    expect(s.metadata).toMatchObject({ name: 'big-s0-abcde-server-0-group', namespace: 'team-a' });
    expect(s.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true, ports: [{ name: 'rendezvous', port: 29500, targetPort: 29500, protocol: 'TCP' }] });
    expect(s.spec!.selector).toEqual({ 'app.kubernetes.io/managed-by': 'gpufleet', [KubeLabels.workload]: 'big-s0-abcde', [KubeLabels.podSet]: 'server', [KubeLabels.replica]: '0' });
  });

  it('names the leader by its pod name under the Service', () => {
    expect(groupLeaderAddress(group, podNameOf({ workload: 'big-s0-abcde', podSet: 'server', replica: 0, pod: 0 }))).toBe('big-s0-abcde-server-0-0.big-s0-abcde-server-0-group.team-a.svc');
  });
});

describe('instanceServiceOf', () => {
  it('exposes SSH as NodePort by default, ClusterIP on request, to the sidecar port', () => {
    const s = instanceServiceOf({ namespace: 'team-a', name: 'dev-box', uid: 'uid-box' });
    expect(s.metadata!.name).toBe('dev-box-ssh');
    expect(s.spec).toMatchObject({ type: 'NodePort', ports: [{ name: 'ssh', port: 22, targetPort: 'ssh', protocol: 'TCP' }] });
    expect(s.spec!.ports![0].nodePort).toBeUndefined();
    expect(instanceServiceOf({ namespace: 'team-a', name: 'dev-box', uid: '', type: 'ClusterIP', port: 2222 }).spec).toMatchObject({ type: 'ClusterIP', ports: [{ port: 2222 }] });
  });
});

describe('desiredObjects', () => {
  it('makes a Pod per pod, an SSH Service per instance and a Service per deployment, and reports refused pods as data', () => {
    const objects = desiredObjects(
      { pods: [enginePod(), instancePod(), enginePod({ ref: { workload: 'bad-s0-xxxxx' }, placement: { acceleratorIds: ['nvidia-9'] } })], deployments: [{ namespace: 'team-a', name: 'llama', uid: 'uid-llama' }], sshServiceType: 'ClusterIP' },
      context(),
    );
    expect(objects.pods.map((p) => p.metadata!.name)).toEqual(['llama-s0-bcdfg-server-0-0', 'dev-box-kx7qz-instance-0-0']);
    expect(objects.services.map((s) => `${s.metadata!.name}:${s.spec!.type}`)).toEqual(['dev-box-ssh:ClusterIP', 'llama:ClusterIP']);
    expect(objects.failed).toHaveLength(1);
    expect(objects.failed[0]).toMatchObject({ reason: 'UNKNOWN_ACCELERATOR' });
    expect(objects.failed[0].message).toMatch(/^UNKNOWN_ACCELERATOR: accelerator nvidia-9 is not in the inventory of node h100-0/);
  });
});

describe('desiredKubePods', () => {
  const run = enginePod().template;
  const workload = Workload.fromPartial({
    spec: WorkloadSpec.fromPartial({ name: 'llama-s0-bcdfg', namespace: 'team-a', labels: { 'gpufleet.io/deployment': 'llama', 'gpufleet.io/owner-uid': 'uid-llama' }, template: run }),
    status: WorkloadStatus.fromPartial({ phase: WorkloadPhase.WORKLOAD_PHASE_ADMITTED }),
  });
  const ledger = NodeLedger.fromPartial({ node: 'h100-0', entries: [{ workload: 'team-a/llama-s0-bcdfg', pod: { podSet: 'server', replica: 0, pod: 0, node: 'h100-0', acceleratorIds: ['nvidia-0'] } }] });

  it('is node-runtime-core desiredPods over every ledger, with the workload labels and owner', () => {
    const pods = desiredKubePods([ledger], new Map([['team-a.llama-s0-bcdfg', workload]]), { ownerOf: () => ({ kind: 'ModelDeployment', name: 'llama', uid: 'k1' }) });
    expect(pods).toHaveLength(1);
    expect(pods[0]).toMatchObject({ id: 'team-a/llama-s0-bcdfg/server/0/0', workloadLabels: { 'gpufleet.io/deployment': 'llama' }, owner: { uid: 'k1' } });
  });
});

describe('deviceResourceOf', () => {
  const base = { acceleratorIds: ['nvidia-0'], sharedTokens: 0, sliceMemoryMib: 0, sliceCoresPercent: 0, partition: undefined };
  it('maps each allocation mode to its device-plugin resource', () => {
    expect(deviceResourceOf({ ...base, acceleratorIds: ['nvidia-0', 'nvidia-1'] })).toEqual({ name: 'gpufleet.io/nvidia-gpu', quantity: 2 });
    expect(deviceResourceOf({ ...base, sharedTokens: 3 })).toEqual({ name: 'gpufleet.io/nvidia-gpu-shared', quantity: 3 });
    expect(deviceResourceOf({ ...base, sliceMemoryMib: 1024 })).toEqual({ name: 'gpufleet.io/nvidia-gpu-slice', quantity: 1 });
    expect(deviceResourceOf({ ...base, acceleratorIds: [], partition: { acceleratorId: 'nvidia-0', profile: 'MIG 1g.10gb', start: 0 } })).toEqual({ name: 'gpufleet.io/nvidia-mig-1g.10gb', quantity: 1 });
    expect(deviceResourceOf({ ...base, acceleratorIds: [] })).toBeUndefined();
  });

  it('keeps MIG resource names valid', () => {
    expect(migResourceName('1g.10gb+me')).toBe('gpufleet.io/nvidia-mig-1g.10gb.me');
    expect(migResourceName('7g.80gb')).toBe('gpufleet.io/nvidia-mig-7g.80gb');
  });
});

describe('dnsLabel', () => {
  it('keeps a valid label and hashes anything it had to change', () => {
    expect(dnsLabel('llama', 'server', 0, 1)).toBe('llama-server-0-1');
    expect(dnsLabel('Llama_8B')).toMatch(/^llama-8b-[0-9a-f]{10}$/);
    expect(dnsLabel('llama-8b')).not.toBe(dnsLabel('Llama-8B'));
  });

  it('always gives a DNS-1123 label of at most 63 characters, the same for the same input', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ maxLength: 80 }), fc.nat()), { minLength: 1, maxLength: 5 }), (parts) => {
        const name = dnsLabel(...parts);
        expect(name.length).toBeLessThanOrEqual(63);
        expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
        expect(dnsLabel(...parts)).toBe(name);
      }),
    );
  });
});

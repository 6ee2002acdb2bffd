import { AcceleratorVendor, ClusterQueue, LocalQueue, PreemptionPolicy, QueueingStrategy } from '@gpufleet/contracts';
import { node } from '@gpufleet/testing';
import {
  ADMISSION_CHECK,
  admissionCheckOf,
  clusterQueueOf,
  clusterQueueOfWorkload,
  CREDITS_RESOURCE,
  desiredKueueObjects,
  localQueueOf,
  parseQuantity,
  placedMessage,
  podSetsOfWorkload,
  poolNodeLabels,
  resourceFlavorOf,
  staleKueueObjects,
  withPlacementCheck,
  type KueueWorkload,
} from './mapping';

const H100 = { acceleratorVendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA, acceleratorProduct: 'NVIDIA H100 80GB HBM3' };
const CPU = { acceleratorVendor: AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED, acceleratorProduct: '' };
const MANAGED = { 'app.kubernetes.io/managed-by': 'gpufleet' };

describe('Kueue mapping: pools and queues', () => {
  it('a ResourceFlavor per pool selects the labels its nodes share (product, arch, os)', () => {
    const flavor = resourceFlavorOf({ name: 'h100-x', ...H100, nodes: [node('a'), node('b')] });
    expect(flavor).toMatchObject({ apiVersion: 'kueue.x-k8s.io/v1beta2', kind: 'ResourceFlavor', metadata: { name: 'h100-x', labels: MANAGED } });
    const labels = flavor.spec.nodeLabels as Record<string, string>;
    expect(labels['nvidia.com/gpu.product']).toMatch(/H100/);
    expect(labels['kubernetes.io/arch']).toBe('amd64');
    expect(Object.keys(labels).every((k) => ['nvidia.com/gpu.product', 'kubernetes.io/arch', 'kubernetes.io/os'].includes(k))).toBe(true);
    expect(poolNodeLabels([])).toEqual({});
  });

  it('labels that differ between the nodes are left out', () => {
    const labels = poolNodeLabels([node('a'), node('b', { product: 'NVIDIA A100-SXM4-80GB' })]);
    expect(labels['nvidia.com/gpu.product']).toBeUndefined();
    expect(labels['kubernetes.io/arch']).toBe('amd64');
  });

  it('a ClusterQueue: credits and the whole accelerators they buy, cohortName, limits, the admission check', () => {
    const cq = ClusterQueue.fromPartial({
      name: 'h100',
      pool: 'h100-x',
      cohort: 'research',
      nominalQuota: 8 * 1_600_000,
      borrowingLimit: 3_200_000,
      lendingLimit: 1_600_000,
      queueingStrategy: QueueingStrategy.QUEUEING_STRATEGY_STRICT_FIFO,
      withinClusterQueue: PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY,
      reclaimWithinCohort: PreemptionPolicy.PREEMPTION_POLICY_ANY,
      fairSharingWeight: 2,
    });
    expect(clusterQueueOf(cq, H100)).toEqual({
      apiVersion: 'kueue.x-k8s.io/v1beta2',
      kind: 'ClusterQueue',
      metadata: { name: 'h100', labels: MANAGED },
      spec: {
        cohortName: 'research',
        namespaceSelector: {},
        queueingStrategy: 'StrictFIFO',
        resourceGroups: [
          {
            coveredResources: [CREDITS_RESOURCE, 'gpufleet.io/nvidia-gpu'],
            flavors: [
              {
                name: 'h100-x',
                resources: [
                  { name: CREDITS_RESOURCE, nominalQuota: '12800000', borrowingLimit: '3200000', lendingLimit: '1600000' },
                  { name: 'gpufleet.io/nvidia-gpu', nominalQuota: '8', borrowingLimit: '2', lendingLimit: '1' },
                ],
              },
            ],
          },
        ],
        admissionChecksStrategy: { admissionChecks: [{ name: ADMISSION_CHECK }] },
        preemption: { withinClusterQueue: 'LowerPriority', reclaimWithinCohort: 'Any' },
        fairSharing: { weight: '2' },
      },
    });
  });

  it('without a cohort: no cohortName and no limits; a CPU pool covers credits only', () => {
    const cq = ClusterQueue.fromPartial({ name: 'cpu', pool: 'cpu-x', nominalQuota: 100_000, borrowingLimit: 5 });
    const spec = clusterQueueOf(cq, CPU).spec;
    expect(spec.cohortName).toBeUndefined();
    expect(spec.queueingStrategy).toBe('BestEffortFIFO');
    expect(spec.resourceGroups).toEqual([{ coveredResources: [CREDITS_RESOURCE], flavors: [{ name: 'cpu-x', resources: [{ name: CREDITS_RESOURCE, nominalQuota: '100000' }] }] }]);
    expect(spec.preemption).toEqual({ withinClusterQueue: 'Never', reclaimWithinCohort: 'Never' });
    expect(spec.fairSharing).toBeUndefined();
  });

  it("with the pool's nodes known, cpu and memory are covered with the pool's totals", () => {
    const cq = ClusterQueue.fromPartial({ name: 'h', pool: 'p', nominalQuota: 1_600_000 });
    const nodes = [node('a'), node('b')];
    const vcpu = nodes.reduce((n, i) => n + i.cpu!.logicalCpus, 0);
    const mib = nodes.reduce((n, i) => n + i.memory!.totalMib, 0);
    expect(clusterQueueOf(cq, { ...H100, nodes }).spec.resourceGroups).toEqual([
      {
        coveredResources: [CREDITS_RESOURCE, 'gpufleet.io/nvidia-gpu', 'cpu', 'memory'],
        flavors: [
          {
            name: 'p',
            resources: [
              { name: CREDITS_RESOURCE, nominalQuota: '1600000' },
              { name: 'gpufleet.io/nvidia-gpu', nominalQuota: '1' },
              { name: 'cpu', nominalQuota: String(vcpu) },
              { name: 'memory', nominalQuota: `${mib}Mi` },
            ],
          },
        ],
      },
    ]);
  });

  it('a LocalQueue in its namespace, pointing at its ClusterQueue; the AdmissionCheck', () => {
    expect(localQueueOf(LocalQueue.fromPartial({ namespace: 'team-a', name: 'default', clusterQueue: 'h100' }))).toEqual({
      apiVersion: 'kueue.x-k8s.io/v1beta2',
      kind: 'LocalQueue',
      metadata: { name: 'default', namespace: 'team-a', labels: MANAGED },
      spec: { clusterQueue: 'h100' },
    });
    expect(admissionCheckOf()).toMatchObject({ kind: 'AdmissionCheck', metadata: { name: 'gpufleet-placement' }, spec: { controllerName: 'gpufleet.io/placement' } });
  });

  it('desired objects, sorted; stale ones are the managed objects nothing desired matches', () => {
    const desired = desiredKueueObjects({
      pools: [{ name: 'p', ...H100, nodes: [node('a')] }],
      clusterQueues: [ClusterQueue.fromPartial({ name: 'b', pool: 'p', nominalQuota: 1 }), ClusterQueue.fromPartial({ name: 'a', pool: 'gone', nominalQuota: 1 })],
      localQueues: [LocalQueue.fromPartial({ namespace: 'n', name: 'q', clusterQueue: 'a' })],
    });
    expect(desired.clusterQueues.map((q) => q.metadata.name)).toEqual(['a', 'b']);
    expect((desired.clusterQueues[0].spec.resourceGroups as Array<{ coveredResources: string[] }>)[0].coveredResources).toEqual([CREDITS_RESOURCE]);
    const observed = [
      { kind: 'ClusterQueue', metadata: { name: 'a', labels: MANAGED } },
      { kind: 'ClusterQueue', metadata: { name: 'old', labels: MANAGED } },
      { kind: 'ClusterQueue', metadata: { name: 'theirs' } },
      { kind: 'LocalQueue', metadata: { name: 'q', namespace: 'other', labels: MANAGED } },
    ];
    expect(staleKueueObjects([...desired.clusterQueues, ...desired.localQueues], observed).map((o) => o.metadata!.name + '@' + (o.metadata!.namespace ?? ''))).toEqual(['old@', 'q@other']);
  });
});

describe('Kueue mapping: the gpufleet-placement admission check', () => {
  const wl = (over: Partial<KueueWorkload> = {}): KueueWorkload => ({
    metadata: { name: 'job', namespace: 'team-a' },
    spec: {
      queueName: 'default',
      podSets: [
        {
          name: 'workers',
          count: 2,
          template: { spec: { containers: [{ resources: { requests: { cpu: '1500m', memory: '1Gi', 'gpufleet.io/nvidia-gpu': '4' } } }, { resources: { requests: { cpu: '500m' }, limits: { memory: '512Mi' } } }] } },
        },
      ],
    },
    status: { admissionChecks: [{ name: 'other', state: 'Ready' }, { name: ADMISSION_CHECK, state: 'Pending', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
    ...over,
  });

  it('quantities', () => {
    expect(parseQuantity('500m')).toBe(0.5);
    expect(parseQuantity('2Gi')).toBe(2 ** 31);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity('3')).toBe(3);
    expect(parseQuantity(4)).toBe(4);
    expect(parseQuantity('lots')).toBeNaN();
  });

  it('podSets become gpufleet pod sets: count pods, summed requests (limits where no request)', () => {
    expect(podSetsOfWorkload(wl(), 'gpufleet.io/nvidia-gpu')).toEqual({
      ok: true,
      podSets: [
        {
          name: 'workers',
          count: 2,
          size: 1,
          resources: { accelerator: { whole: 4, sharedTokens: undefined, slice: undefined, partitionProfile: undefined }, vcpu: 2, memoryMib: 1536 },
          topology: { requiredLevel: '', preferredLevel: '' },
        },
      ],
    });
    expect(podSetsOfWorkload(wl({ spec: { podSets: [] } }), undefined)).toEqual({ ok: false, message: 'the Workload has no podSets' });
    const bad = wl({ spec: { podSets: [{ name: 'x', count: 1, template: { spec: { containers: [{ resources: { requests: { cpu: 'many' } } }] } } }] } });
    expect(podSetsOfWorkload(bad, undefined)).toEqual({ ok: false, message: 'pod set "x": cpu "many" is not a quantity' });
  });

  it('the ClusterQueue: where quota is reserved, else where the LocalQueue leads', () => {
    expect(clusterQueueOfWorkload(wl({ status: { admission: { clusterQueue: 'h100' } } }), () => 'x')).toBe('h100');
    expect(clusterQueueOfWorkload(wl(), (ns, name) => (ns === 'team-a' && name === 'default' ? 'l40s' : undefined))).toBe('l40s');
  });

  it('the check entry is replaced, others kept; no change gives undefined', () => {
    const now = new Date('2026-02-02T00:00:00Z');
    const next = withPlacementCheck(wl(), 'Ready', placedMessage([{ node: 'gpu-1' }, { node: 'gpu-0' }]), now)!;
    expect(next).toEqual([
      { name: 'other', state: 'Ready' },
      { name: ADMISSION_CHECK, state: 'Ready', message: 'gpufleet can place the 2 pods on nodes gpu-0, gpu-1', lastTransitionTime: now.toISOString() },
    ]);
    expect(withPlacementCheck(wl({ status: { admissionChecks: next } }), 'Ready', 'gpufleet can place the 2 pods on nodes gpu-0, gpu-1', now)).toBeUndefined();
    const pending = withPlacementCheck(wl(), 'Pending', 'no room', now)!;
    expect(pending[1]).toMatchObject({ state: 'Pending', message: 'no room', lastTransitionTime: '2026-01-01T00:00:00Z' });
    expect(withPlacementCheck(wl({ status: {} }), 'Ready', 'x', now)).toBeUndefined();
  });
});

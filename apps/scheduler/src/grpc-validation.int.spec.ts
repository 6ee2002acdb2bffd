// Table-driven validation of every request type of the scheduler's five gRPC services, over a
// real gRPC server (the scheduler in-process on real NATS): each bad input gets the status a
// client sees (INVALID_ARGUMENT, or NOT_FOUND for a well-formed name that does not exist) and a
// message naming the field.
import { status } from '@grpc/grpc-js';
import { ClusterQueue, GPUInstanceSpec, LocalQueue, ModelDeploymentSpec, WorkloadPhase, WorkloadSpec } from '@gpufleet/contracts';
import { callUnary, iterateStream } from '@gpufleet/grpc-kit';
import { grpcError, waitFor } from '@gpufleet/testing';
import { clusterQueue, deployment, instance, localQueue, workload } from './__fixtures__/requests';
import { SchedulerHarness } from './__fixtures__/scheduler-harness';

let h: SchedulerHarness;

beforeAll(async () => {
  h = await SchedulerHarness.start();
});

afterAll(() => h?.stop());

const long = (n: number) => 'a'.repeat(n);

let pool = '';

interface Row {
  readonly input: string;
  readonly call: () => Promise<unknown>;
  /** default INVALID_ARGUMENT */
  readonly code?: status;
  /** The field the message names (and the gpufleet-field metadata, for INVALID_ARGUMENT). */
  readonly field: string;
}

async function expectRefused(row: Row): Promise<void> {
  const err = await grpcError(row.call());
  const code = row.code ?? status.INVALID_ARGUMENT;
  expect({ input: row.input, code: status[err.code], details: err.details }).toMatchObject({ input: row.input, code: status[code] });
  expect(err.details).toContain(row.field);
  if (code === status.INVALID_ARGUMENT) expect(String(err.metadata.get('gpufleet-field')[0] ?? '')).toContain(row.field.split('[')[0]);
}

beforeAll(async () => {
  const pools = await callUnary(h.clients.capacity, h.clients.capacity.listPools, { pageSize: 0, pageToken: '' }, { metadata: h.admin() });
  pool = pools.pools[0].name;
});

describe('CapacityService', () => {
  const c = () => h.clients.capacity;
  const md = () => ({ metadata: h.admin() });
  const rows: Row[] = [
    { input: 'ListNodes pool with a space', field: 'pool', call: () => callUnary(c(), c().listNodes, { pool: 'a b', labelSelector: {}, pageSize: 0, pageToken: '' }, md()) },
    { input: 'ListNodes unknown pool', field: 'pool', code: status.NOT_FOUND, call: () => callUnary(c(), c().listNodes, { pool: 'nope', labelSelector: {}, pageSize: 0, pageToken: '' }, md()) },
    { input: 'ListNodes bad label key', field: 'labelSelector', call: () => callUnary(c(), c().listNodes, { pool: '', labelSelector: { 'bad key!': 'x' }, pageSize: 0, pageToken: '' }, md()) },
    { input: 'ListNodes negative page_size', field: 'page_size', call: () => callUnary(c(), c().listNodes, { pool: '', labelSelector: {}, pageSize: -1, pageToken: '' }, md()) },
    { input: 'ListNodes garbage page_token', field: 'page_token', call: () => callUnary(c(), c().listNodes, { pool: '', labelSelector: {}, pageSize: 10, pageToken: '%%%' }, md()) },
    { input: 'GetNode empty name', field: 'name', call: () => callUnary(c(), c().getNode, { name: '' }, md()) },
    { input: 'GetNode 300-char name', field: 'name', call: () => callUnary(c(), c().getNode, { name: long(300) }, md()) },
    { input: 'GetNode unknown', field: 'node', code: status.NOT_FOUND, call: () => callUnary(c(), c().getNode, { name: 'gpu-99' }, md()) },
    { input: 'ListInstanceTypes bad pool', field: 'pool', call: () => callUnary(c(), c().listInstanceTypes, { pool: '../x', pageSize: 0, pageToken: '' }, md()) },
    { input: 'ListInstanceTypes unknown pool', field: 'pool', code: status.NOT_FOUND, call: () => callUnary(c(), c().listInstanceTypes, { pool: 'nope', pageSize: 0, pageToken: '' }, md()) },
    { input: 'ListInstanceTypes negative page_size', field: 'page_size', call: () => callUnary(c(), c().listInstanceTypes, { pool: '', pageSize: -5, pageToken: '' }, md()) },
    { input: 'ListInstanceTypes garbage page_token', field: 'page_token', call: () => callUnary(c(), c().listInstanceTypes, { pool: '', pageSize: 1, pageToken: 'not-a-token' }, md()) },
    { input: 'ListPools negative page_size', field: 'page_size', call: () => callUnary(c(), c().listPools, { pageSize: -1, pageToken: '' }, md()) },
    { input: 'ListPools garbage page_token', field: 'page_token', call: () => callUnary(c(), c().listPools, { pageSize: 1, pageToken: '!' }, md()) },
    { input: 'GetInstanceType empty', field: 'name', call: () => callUnary(c(), c().getInstanceType, { name: '' }, md()) },
    { input: 'GetInstanceType unicode', field: 'name', call: () => callUnary(c(), c().getInstanceType, { name: 'gpü' }, md()) },
    { input: 'GetInstanceType unknown', field: 'InstanceType', code: status.NOT_FOUND, call: () => callUnary(c(), c().getInstanceType, { name: 'nope' }, md()) },
    {
      input: 'WatchInstanceTypes bad pool',
      field: 'pool',
      call: async () => {
        for await (const _ of iterateStream(c().watchInstanceTypes({ pool: 'x y', initial: true }, h.admin()))) break;
      },
    },
  ];
  it.each(rows.map((r) => [r.input, r]))('%s', (_input, row) => expectRefused(row));
});

describe('errors that echo oversized input', () => {
  it('stay short, and the connection keeps serving (a 100 000-character name used to hang it)', async () => {
    const c = h.clients.capacity;
    const err = await grpcError(callUnary(c, c.getNode, { name: 'a b'.repeat(40_000) }, { metadata: h.admin(), deadlineMs: 3_000 }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details.length).toBeLessThan(500);
    expect(err.details).toContain('(120000 characters)');
    const next = await grpcError(callUnary(c, c.getNode, { name: 'gpu-99' }, { metadata: h.admin(), deadlineMs: 3_000 }));
    expect(next.code).toBe(status.NOT_FOUND);
  });

  it('name a field with control characters in ASCII metadata instead of failing with INTERNAL', async () => {
    const d = h.clients.deployments;
    const err = await grpcError(callUnary(d, d.createDeployment, { spec: deployment({ labels: { '\n': 'v'.repeat(300) } }) }, { metadata: h.admin() }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.metadata.get('gpufleet-field')).toEqual(['labels["\\u{a}"]']);
  });
});

describe('SchedulingService', () => {
  const s = () => h.clients.scheduling;
  const md = () => ({ metadata: h.admin() });
  const submit = (spec: WorkloadSpec | undefined) => callUnary(s(), s().submitWorkload, { spec }, md());
  const podSet = (over: object) => [{ name: 'main', count: 1, size: 1, resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 }, ...over }];
  const rows: Row[] = [
    { input: 'SubmitWorkload no spec', field: 'spec', call: () => submit(undefined) },
    { input: 'SubmitWorkload empty name', field: 'name', call: () => submit(workload({ name: '' })) },
    { input: 'SubmitWorkload upper-case name', field: 'name', call: () => submit(workload({ name: 'Bad' })) },
    { input: 'SubmitWorkload 64-char name', field: 'name', call: () => submit(workload({ name: long(64) })) },
    { input: 'SubmitWorkload bad namespace', field: 'namespace', call: () => submit(workload({ namespace: 'a.b' })) },
    { input: 'SubmitWorkload empty local_queue', field: 'localQueue', call: () => submit(workload({ localQueue: '' })) },
    { input: 'SubmitWorkload unknown local_queue', field: 'localQueue', call: () => submit(workload({ localQueue: 'nope' })) },
    { input: 'SubmitWorkload no pod sets', field: 'podSets', call: () => submit(workload({ podSets: [] })) },
    { input: 'SubmitWorkload count 0', field: 'podSets[0].count', call: () => submit(workload({ podSets: podSet({ count: 0 }) })) },
    { input: 'SubmitWorkload 9 whole GPUs per pod', field: 'podSets[0]', call: () => submit(workload({ podSets: podSet({ resources: { accelerator: { whole: 9 }, vcpu: 1, memoryMib: 1 } }) })) },
    { input: 'SubmitWorkload no resources', field: 'podSets[0].resources', call: () => submit(workload({ podSets: podSet({ resources: undefined }) })) },
    { input: 'SubmitWorkload unknown partition profile', field: 'podSets[0].resources', call: () => submit(workload({ podSets: podSet({ resources: { accelerator: { partitionProfile: '99g.1gb' }, vcpu: 1, memoryMib: 1 } }) })) },
    { input: 'SubmitWorkload bad topology level', field: 'podSets[0].topology', call: () => submit(workload({ podSets: podSet({ topology: { requiredLevel: 'galaxy', preferredLevel: '' } }) })) },
    { input: 'SubmitWorkload owner label', field: 'spec.labels', call: () => submit(workload({ labels: { 'gpufleet.io/deployment': 'x' } })) },
    { input: 'SubmitWorkload 4294967295 CPU-only pods', field: 'podSets', call: () => submit(workload({ podSets: podSet({ count: 2 ** 32 - 1, resources: { vcpu: 1, memoryMib: 1 } }) })) },
    { input: 'SubmitWorkload 2 MB of labels (past NATS max_payload)', field: 'spec', call: () => submit(workload({ name: 'huge', labels: { big: 'v'.repeat(2_000_000) } })) },
    { input: 'SubmitWorkload unknown pool', field: 'localQueue', call: () => submit(workload({ pool: 'nope' })) },
    { input: 'GetWorkload empty namespace', field: 'namespace', call: () => callUnary(s(), s().getWorkload, { namespace: '', name: 'w' }, md()) },
    { input: 'GetWorkload bad name', field: 'name', call: () => callUnary(s(), s().getWorkload, { namespace: 'default', name: '-x' }, md()) },
    { input: 'GetWorkload unknown', field: 'workload', code: status.NOT_FOUND, call: () => callUnary(s(), s().getWorkload, { namespace: 'default', name: 'nope' }, md()) },
    { input: 'ListWorkloads bad namespace', field: 'namespace', call: () => callUnary(s(), s().listWorkloads, { namespace: 'A', phase: WorkloadPhase.WORKLOAD_PHASE_UNSPECIFIED, clusterQueue: '', pageSize: 0, pageToken: '' }, md()) },
    { input: 'ListWorkloads negative page_size', field: 'page_size', call: () => callUnary(s(), s().listWorkloads, { namespace: '', phase: WorkloadPhase.WORKLOAD_PHASE_UNSPECIFIED, clusterQueue: '', pageSize: -1, pageToken: '' }, md()) },
    { input: 'ListWorkloads garbage page_token', field: 'page_token', call: () => callUnary(s(), s().listWorkloads, { namespace: '', phase: WorkloadPhase.WORKLOAD_PHASE_UNSPECIFIED, clusterQueue: '', pageSize: 1, pageToken: 'eyJ4IjoxfQ' }, md()) },
    { input: 'DeleteWorkload bad namespace', field: 'namespace', call: () => callUnary(s(), s().deleteWorkload, { namespace: '_', name: 'w' }, md()) },
    { input: 'DeleteWorkload unknown', field: 'workload', code: status.NOT_FOUND, call: () => callUnary(s(), s().deleteWorkload, { namespace: 'default', name: 'nope' }, md()) },
    { input: 'ExplainPending bad name', field: 'name', call: () => callUnary(s(), s().explainPending, { namespace: 'default', name: long(100) }, md()) },
    { input: 'ExplainPending unknown', field: 'workload', code: status.NOT_FOUND, call: () => callUnary(s(), s().explainPending, { namespace: 'default', name: 'nope' }, md()) },
    {
      input: 'WatchWorkloads bad namespace',
      field: 'namespace',
      call: async () => {
        for await (const _ of iterateStream(s().watchWorkloads({ namespace: 'NS', initial: true }, h.admin()))) break;
      },
    },
  ];
  it.each(rows.map((r) => [r.input, r]))('%s', (_input, row) => expectRefused(row));
});

describe('QueueService', () => {
  const q = () => h.clients.queues;
  const md = () => ({ metadata: h.admin() });
  const putCq = (cq: ClusterQueue | undefined) => callUnary(q(), q().putClusterQueue, { clusterQueue: cq }, md());
  const putLq = (lq: LocalQueue | undefined) => callUnary(q(), q().putLocalQueue, { localQueue: lq }, md());
  const rows: Row[] = [
    { input: 'PutClusterQueue none', field: 'clusterQueue', call: () => putCq(undefined) },
    { input: 'PutClusterQueue empty name', field: 'name', call: () => putCq(clusterQueue(pool, { name: '' })) },
    { input: 'PutClusterQueue bad name', field: 'name', call: () => putCq(clusterQueue(pool, { name: 'Bad Name' })) },
    { input: 'PutClusterQueue unknown pool', field: 'pool', call: () => putCq(clusterQueue(pool, { pool: 'nope' })) },
    { input: 'PutClusterQueue bad cohort', field: 'cohort', call: () => putCq(clusterQueue(pool, { cohort: 'no spaces' })) },
    { input: 'PutClusterQueue negative weight', field: 'fairSharingWeight', call: () => putCq(clusterQueue(pool, { fairSharingWeight: -1 })) },
    { input: 'PutClusterQueue NaN weight', field: 'fairSharingWeight', call: () => putCq(clusterQueue(pool, { fairSharingWeight: Number.NaN })) },
    { input: 'PutClusterQueue bad packing', field: 'packing', call: () => putCq(clusterQueue(pool, { packing: 'sideways' })) },
    { input: 'GetClusterQueue unknown', field: 'ClusterQueue', code: status.NOT_FOUND, call: () => callUnary(q(), q().getClusterQueue, { name: 'nope' }, md()) },
    { input: 'GetClusterQueue empty name', field: 'name', call: () => callUnary(q(), q().getClusterQueue, { name: '' }, md()) },
    { input: 'DeleteClusterQueue unknown', field: 'ClusterQueue', code: status.NOT_FOUND, call: () => callUnary(q(), q().deleteClusterQueue, { name: 'nope' }, md()) },
    { input: 'DeleteClusterQueue bad name', field: 'name', call: () => callUnary(q(), q().deleteClusterQueue, { name: 'a/b' }, md()) },
    { input: 'ListClusterQueues negative page_size', field: 'page_size', call: () => callUnary(q(), q().listClusterQueues, { pageSize: -1, pageToken: '' }, md()) },
    { input: 'ListClusterQueues garbage page_token', field: 'page_token', call: () => callUnary(q(), q().listClusterQueues, { pageSize: 1, pageToken: '???' }, md()) },
    { input: 'PutLocalQueue none', field: 'localQueue', call: () => putLq(undefined) },
    { input: 'PutLocalQueue bad namespace', field: 'namespace', call: () => putLq(localQueue({ namespace: 'Upper' })) },
    { input: 'PutLocalQueue empty name', field: 'name', call: () => putLq(localQueue({ name: '' })) },
    { input: 'PutLocalQueue unknown ClusterQueue', field: 'clusterQueue', call: () => putLq(localQueue({ clusterQueue: 'nope' })) },
    { input: 'ListLocalQueues bad namespace', field: 'namespace', call: () => callUnary(q(), q().listLocalQueues, { namespace: 'a_b', pageSize: 0, pageToken: '' }, md()) },
    { input: 'ListLocalQueues negative page_size', field: 'page_size', call: () => callUnary(q(), q().listLocalQueues, { namespace: '', pageSize: -1, pageToken: '' }, md()) },
    { input: 'ListLocalQueues garbage page_token', field: 'page_token', call: () => callUnary(q(), q().listLocalQueues, { namespace: '', pageSize: 1, pageToken: '-' }, md()) },
    { input: 'DeleteLocalQueue bad namespace', field: 'namespace', call: () => callUnary(q(), q().deleteLocalQueue, { namespace: '', name: 'lq' }, md()) },
    { input: 'DeleteLocalQueue unknown', field: 'LocalQueue', code: status.NOT_FOUND, call: () => callUnary(q(), q().deleteLocalQueue, { namespace: 'default', name: 'nope' }, md()) },
    { input: 'ListCohorts negative page_size', field: 'page_size', call: () => callUnary(q(), q().listCohorts, { pageSize: -1, pageToken: '' }, md()) },
  ];
  it.each(rows.map((r) => [r.input, r]))('%s', (_input, row) => expectRefused(row));

  it('PutClusterQueue stores a queue without the managedBy a caller sent (read-only: the scheduler would take it over)', async () => {
    const { clusterQueue: stored } = await putCq(clusterQueue(pool, { name: 'mine', managedBy: 'gpufleet' }));
    expect(stored?.managedBy).toBeUndefined();
    // Reads come from this replica's mirror of the store, a few milliseconds behind the write.
    const read = await waitFor('ClusterQueue mine in the mirror', async () => (await callUnary(q(), q().getClusterQueue, { name: 'mine' }, md()).catch(() => undefined))?.clusterQueue, { timeoutMs: 5_000, intervalMs: 20 });
    expect(read?.managedBy).toBeUndefined();
  });
});

describe('DeploymentService', () => {
  const d = () => h.clients.deployments;
  const md = () => ({ metadata: h.admin() });
  const create = (spec: ModelDeploymentSpec | undefined) => callUnary(d(), d().createDeployment, { spec }, md());
  const role = (over: object) => [{ role: 'server', replicas: 1, size: 1, resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 }, ...over }];
  const rows: Row[] = [
    { input: 'CreateDeployment no spec', field: 'spec', call: () => create(undefined) },
    { input: 'CreateDeployment empty name', field: 'name', call: () => create(deployment({ name: '' })) },
    { input: 'CreateDeployment bad namespace', field: 'namespace', call: () => create(deployment({ namespace: 'x.y' })) },
    { input: 'CreateDeployment empty model', field: 'model', call: () => create(deployment({ model: '' })) },
    { input: 'CreateDeployment artifact that is not a DNS label', field: 'artifact', call: () => create(deployment({ artifact: 'Llama_3' })) },
    { input: 'CreateDeployment artifact the namespace does not have', field: 'artifact', call: () => create(deployment({ model: '', artifact: 'no-such-weights' })) },
    { input: 'CreateDeployment model that is a flag', field: 'model', call: () => create(deployment({ model: '--trust-remote-code' })) },
    { input: 'CreateDeployment unknown engine', field: 'engine', call: () => create(deployment({ engine: { engine: 'warp-drive', version: '', mode: '', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined } })) },
    { input: 'CreateDeployment no roles', field: 'roles', call: () => create(deployment({ roles: [] })) },
    { input: 'CreateDeployment role without a pod shape', field: 'roles[0]', call: () => create(deployment({ roles: role({ resources: undefined, instanceType: '' }) })) },
    { input: 'CreateDeployment unknown InstanceType', field: 'roles[0].instanceType', call: () => create(deployment({ roles: role({ resources: undefined, instanceType: 'nope' }) })) },
    { input: 'CreateDeployment 9 GPUs per pod', field: 'roles[0]', call: () => create(deployment({ roles: role({ resources: { accelerator: { whole: 9 }, vcpu: 1, memoryMib: 1 } }) })) },
    { input: 'CreateDeployment 4294967295 accelerators per pod', field: 'roles[0].resources.accelerator.whole', call: () => create(deployment({ roles: role({ resources: { accelerator: { whole: 2 ** 32 - 1 }, vcpu: 1, memoryMib: 1 } }) })) },
    { input: 'CreateDeployment label value too long under a tab key', field: 'labels', call: () => create(deployment({ labels: { '\t': 'v'.repeat(300) } })) },
    {
      input: 'CreateDeployment 1.5 MB of arguments and environment (each within its own limit)',
      field: 'spec',
      call: () => create(deployment({ name: 'huge', engine: { engine: 'vllm', extraArgs: Array.from({ length: 128 }, (_, i) => `--x${i}=${'v'.repeat(4_000)}`), env: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`V${i}`, 'v'.repeat(2_500)])) }, roles: role({ extraArgs: Array.from({ length: 128 }, (_, i) => `--y${i}=${'v'.repeat(4_000)}`) }) })),
    },
    { input: 'CreateDeployment unknown local queue', field: 'localQueue', call: () => create(deployment({ localQueue: 'nope' })) },
    { input: 'CreateDeployment owner label', field: 'labels', call: () => create(deployment({ labels: { 'gpufleet.io/instance': 'x' } })) },
    { input: 'GetDeployment bad name', field: 'name', call: () => callUnary(d(), d().getDeployment, { namespace: 'default', name: 'A' }, md()) },
    { input: 'GetDeployment unknown', field: 'deployment', code: status.NOT_FOUND, call: () => callUnary(d(), d().getDeployment, { namespace: 'default', name: 'nope' }, md()) },
    { input: 'ListDeployments bad namespace', field: 'namespace', call: () => callUnary(d(), d().listDeployments, { namespace: '-', pageSize: 0, pageToken: '' }, md()) },
    { input: 'ListDeployments negative page_size', field: 'page_size', call: () => callUnary(d(), d().listDeployments, { namespace: '', pageSize: -2, pageToken: '' }, md()) },
    { input: 'UpdateDeployment no spec', field: 'spec', call: () => callUnary(d(), d().updateDeployment, { spec: undefined }, md()) },
    { input: 'UpdateDeployment unknown', field: 'deployment', code: status.NOT_FOUND, call: () => callUnary(d(), d().updateDeployment, { spec: deployment({ name: 'nope' }) }, md()) },
    { input: 'ScaleDeployment bad namespace', field: 'namespace', call: () => callUnary(d(), d().scaleDeployment, { namespace: 'NS', name: 'd', role: '', replicas: 1 }, md()) },
    { input: 'ScaleDeployment unknown', field: 'deployment', code: status.NOT_FOUND, call: () => callUnary(d(), d().scaleDeployment, { namespace: 'default', name: 'nope', role: '', replicas: 1 }, md()) },
    { input: 'DeleteDeployment empty name', field: 'name', call: () => callUnary(d(), d().deleteDeployment, { namespace: 'default', name: '' }, md()) },
    { input: 'DeleteDeployment unknown', field: 'deployment', code: status.NOT_FOUND, call: () => callUnary(d(), d().deleteDeployment, { namespace: 'default', name: 'nope' }, md()) },
    {
      input: 'WatchDeployments bad namespace',
      field: 'namespace',
      call: async () => {
        for await (const _ of iterateStream(d().watchDeployments({ namespace: 'N S', initial: true }, h.admin()))) break;
      },
    },
  ];
  it.each(rows.map((r) => [r.input, r]))('%s', (_input, row) => expectRefused(row));

  it('ScaleDeployment: an unknown role and a replica count past the limit name role and replicas', async () => {
    await callUnary(d(), d().createDeployment, { spec: deployment({ name: 'scale-me' }) }, md());
    await expectRefused({ input: 'unknown role', field: 'role', call: () => callUnary(d(), d().scaleDeployment, { namespace: 'default', name: 'scale-me', role: 'decode', replicas: 1 }, md()) });
    await expectRefused({ input: 'huge replicas', field: 'replicas', call: () => callUnary(d(), d().scaleDeployment, { namespace: 'default', name: 'scale-me', role: '', replicas: 4_294_967_295 }, md()) });
    await expectRefused({ input: 'create again', field: 'default/scale-me', code: status.ALREADY_EXISTS, call: () => callUnary(d(), d().createDeployment, { spec: deployment({ name: 'scale-me' }) }, md()) });
  });
});

describe('InstanceService', () => {
  const i = () => h.clients.instances;
  const md = () => ({ metadata: h.admin() });
  const create = (spec: GPUInstanceSpec | undefined) => callUnary(i(), i().createInstance, { spec }, md());
  const rows: Row[] = [
    { input: 'CreateInstance no spec', field: 'spec', call: () => create(undefined) },
    { input: 'CreateInstance empty name', field: 'name', call: () => create(instance({ name: '' })) },
    { input: 'CreateInstance bad namespace', field: 'namespace', call: () => create(instance({ namespace: long(64) })) },
    { input: 'CreateInstance no shape', field: 'instanceType', call: () => create(instance({ resources: undefined, instanceType: '' })) },
    { input: 'CreateInstance unknown InstanceType', field: 'instanceType', call: () => create(instance({ resources: undefined, instanceType: 'nope' })) },
    { input: 'CreateInstance 9 GPUs', field: 'resources', call: () => create(instance({ resources: { accelerator: { whole: 9 }, vcpu: 1, memoryMib: 1 } })) },
    { input: 'CreateInstance a command of 2 MB', field: 'spec', call: () => create(instance({ name: 'huge', command: 'x'.repeat(2_000_000) })) },
    { input: 'CreateInstance unknown local queue', field: 'localQueue', call: () => create(instance({ localQueue: 'nope' })) },
    { input: 'CreateInstance bad ssh key', field: 'sshPublicKeys[0]', call: () => create(instance({ sshPublicKeys: ['not a key'] })) },
    { input: 'CreateInstance owner label', field: 'labels', call: () => create(instance({ labels: { 'gpufleet.io/deployment': 'x' } })) },
    { input: 'GetInstance bad name', field: 'name', call: () => callUnary(i(), i().getInstance, { namespace: 'default', name: 'a..b' }, md()) },
    { input: 'GetInstance unknown', field: 'instance', code: status.NOT_FOUND, call: () => callUnary(i(), i().getInstance, { namespace: 'default', name: 'nope' }, md()) },
    { input: 'ListInstances bad namespace', field: 'namespace', call: () => callUnary(i(), i().listInstances, { namespace: 'Ü', pageSize: 0, pageToken: '' }, md()) },
    { input: 'ListInstances garbage page_token', field: 'page_token', call: () => callUnary(i(), i().listInstances, { namespace: '', pageSize: 1, pageToken: 'x' }, md()) },
    { input: 'SetInstanceStopped bad namespace', field: 'namespace', call: () => callUnary(i(), i().setInstanceStopped, { namespace: '', name: 'i', stop: true }, md()) },
    { input: 'SetInstanceStopped unknown', field: 'instance', code: status.NOT_FOUND, call: () => callUnary(i(), i().setInstanceStopped, { namespace: 'default', name: 'nope', stop: true }, md()) },
    { input: 'DeleteInstance bad name', field: 'name', call: () => callUnary(i(), i().deleteInstance, { namespace: 'default', name: '' }, md()) },
    { input: 'DeleteInstance unknown', field: 'instance', code: status.NOT_FOUND, call: () => callUnary(i(), i().deleteInstance, { namespace: 'default', name: 'nope' }, md()) },
  ];
  it.each(rows.map((r) => [r.input, r]))('%s', (_input, row) => expectRefused(row));
});

describe('paging of the capacity and queue lists', () => {
  const md = () => ({ metadata: h.admin() });

  /** Every page of size 1, and the one-shot answer (page_size 0): the same items in the same order. */
  async function pagesMatch<T>(list: (pageSize: number, pageToken: string) => Promise<{ items: T[]; next: string }>): Promise<T[]> {
    const all = await list(0, '');
    expect(all.next).toBe('');
    const paged: T[] = [];
    let token = '';
    let calls = 0;
    do {
      const page = await list(1, token);
      expect(page.items.length).toBeLessThanOrEqual(1);
      paged.push(...page.items);
      token = page.next;
      calls++;
    } while (token && calls < 100);
    expect(paged).toEqual(all.items);
    return all.items;
  }

  it('ListPools, ListInstanceTypes, ListClusterQueues, ListLocalQueues and ListCohorts page through everything, in order', async () => {
    const q = h.clients.queues;
    const c = h.clients.capacity;
    await callUnary(q, q.putClusterQueue, { clusterQueue: clusterQueue(pool, { name: 'paged-a', cohort: 'c-one' }) }, md());
    await callUnary(q, q.putClusterQueue, { clusterQueue: clusterQueue(pool, { name: 'paged-b', cohort: 'c-two' }) }, md());
    for (const ns of ['team-b', 'team-a']) await callUnary(q, q.putLocalQueue, { localQueue: localQueue({ namespace: ns, name: 'lq', clusterQueue: 'paged-a' }) }, md());

    const pools = await pagesMatch(async (pageSize, pageToken) => {
      const r = await callUnary(c, c.listPools, { pageSize, pageToken }, md());
      return { items: r.pools.map((p) => p.name), next: r.nextPageToken };
    });
    expect(pools.length).toBeGreaterThan(0);
    const types = await pagesMatch(async (pageSize, pageToken) => {
      const r = await callUnary(c, c.listInstanceTypes, { pool: '', pageSize, pageToken }, md());
      return { items: r.instanceTypes.map((t) => ({ pool: t.pool, accelerators: t.unit?.accelerators ?? 0 })), next: r.nextPageToken };
    });
    // By pool, then unit size (the model's order; name order would put 16x before 2x).
    expect(types.length).toBeGreaterThanOrEqual(4);
    const order = (t: { pool: string; accelerators: number }) => `${t.pool}/${String(t.accelerators).padStart(10, '0')}`;
    expect(types.map(order)).toEqual(types.map(order).sort());
    const cqs = await pagesMatch(async (pageSize, pageToken) => {
      const r = await callUnary(q, q.listClusterQueues, { pageSize, pageToken }, md());
      return { items: r.clusterQueues.map((x) => x.name), next: r.nextPageToken };
    });
    expect(cqs).toEqual(expect.arrayContaining(['paged-a', 'paged-b']));
    const lqs = await pagesMatch(async (pageSize, pageToken) => {
      const r = await callUnary(q, q.listLocalQueues, { namespace: '', pageSize, pageToken }, md());
      return { items: r.localQueues.map((x) => `${x.namespace}/${x.name}`), next: r.nextPageToken };
    });
    expect(lqs.indexOf('team-a/lq')).toBeLessThan(lqs.indexOf('team-b/lq'));
    const cohorts = await pagesMatch(async (pageSize, pageToken) => {
      const r = await callUnary(q, q.listCohorts, { pageSize, pageToken }, md());
      return { items: r.cohorts.map((x) => x.name), next: r.nextPageToken };
    });
    expect(cohorts).toEqual(['c-one', 'c-two']);
  });
});

// Property tests over the scheduler's real gRPC server: random, oversized and odd requests
// (huge strings, unicode, large labels maps, extreme numbers, missing fields) to every write
// method either succeed or get a client error (INVALID_ARGUMENT naming a field, NOT_FOUND,
// ALREADY_EXISTS, FAILED_PRECONDITION); never INTERNAL, UNKNOWN or a dropped call.
import { status, type ServiceError } from '@grpc/grpc-js';
import fc from 'fast-check';
import { ClusterQueue, GPUInstanceSpec, LocalQueue, ModelDeploymentSpec, WorkloadSpec } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import type { PartialOf } from './__fixtures__/requests';
import { CLIENT_ERRORS, SchedulerHarness } from './__fixtures__/scheduler-harness';

let h: SchedulerHarness;
let instanceType = '';

beforeAll(async () => {
  h = await SchedulerHarness.start();
  const c = h.clients.capacity;
  const types = await callUnary(c, c.listInstanceTypes, { pool: '', pageSize: 0, pageToken: '' }, { metadata: h.admin() });
  instanceType = types.instanceTypes[0].name;
});

afterAll(() => h?.stop());

const RUNS = { numRuns: 60 };

// ---- arbitraries: what a hostile or careless client can put on the wire ----------------------

const text = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('', 'default', 'a', 'x-1', 'A', '-x', 'a.b', 'a/b', '..', '\u0000', 'ü', '💥', ' ', 'a'.repeat(63), 'a'.repeat(64)) },
  { weight: 3, arbitrary: fc.string({ maxLength: 80 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  // Oversized values are constants: shrinking a 300 000-character string is all cost, no insight.
  { weight: 1, arbitrary: fc.constantFrom('a'.repeat(300), 'a'.repeat(70_000), 'a'.repeat(300_000)) },
);
const name = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('default', 'p1', 'p2', 'x') }, { weight: 2, arbitrary: text });
const manyLabels = (n: number, key: (i: number) => string) => Object.fromEntries(Array.from({ length: n }, (_, i) => [key(i), 'v'.repeat(100)]));
const labels = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(text, text, { maxKeys: 5 }) },
  { weight: 1, arbitrary: fc.constantFrom(manyLabels(65, (i) => `k${i}`), manyLabels(2_000, (i) => `k${i}`), manyLabels(3, (i) => `${'k'.repeat(10_000)}${i}`), { big: 'v'.repeat(2_000_000) }, { '\n': 'x', '\u0000': '', 'é': 'ü' }) },
);
const uint32 = fc.oneof(fc.constantFrom(0, 1, 8, 9, 2 ** 31 - 1, 2 ** 32 - 1), fc.nat({ max: 2 ** 32 - 1 }));
const int32 = fc.oneof(fc.constantFrom(-(2 ** 31), -1, 0, 2 ** 31 - 1), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
const uint64 = fc.oneof(fc.constantFrom(0, 1, 4096, 2 ** 32, 2 ** 53 - 1), fc.nat());
const double = fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0, 1e308));
const strings = fc.oneof(
  { weight: 4, arbitrary: fc.array(text, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.constantFrom(Array.from({ length: 129 }, (_, i) => `--a${i}`), Array.from({ length: 2_000 }, () => 'x'.repeat(50)), ['x'.repeat(5_000)]) },
);
const partial = <T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }) => fc.record(model, { requiredKeys: [] });

const accelerator = fc.oneof(
  partial({ whole: uint32 }),
  partial({ sharedTokens: uint32 }),
  partial({ slice: partial({ memoryMib: uint64, memoryPercent: uint32, coresPercent: uint32 }) }),
  partial({ partitionProfile: fc.oneof(fc.constantFrom('1g.10gb', '7g.80gb'), text) }),
);
const resources = partial({ accelerator, vcpu: uint32, memoryMib: uint64 });
const topology = partial({ requiredLevel: fc.oneof(fc.constantFrom('', 'node', 'rack', 'zone', 'nvlinkDomain'), text), preferredLevel: text });
const podSet = partial({ name, count: uint32, size: uint32, resources, topology });

const workloadSpec = partial({
  name,
  namespace: name,
  localQueue: name,
  priority: int32,
  podSets: fc.array(podSet, { maxLength: 4 }),
  labels,
  pool: text,
});

const env = fc.oneof(labels, fc.constant({ '': 'x', 'A=B': 'c', '\u0000': '' }));
const engine = partial({
  engine: fc.oneof(fc.constantFrom('vllm', 'sglang', 'trtllm', 'llama.cpp', 'custom', 'engine-sim'), text),
  version: text,
  mode: text,
  customCommand: text,
  extraArgs: strings,
  env,
});
const role = fc.record(
  {
    role: fc.oneof(fc.constantFrom('server', 'prefill', 'decode'), text),
    replicas: uint32,
    size: uint32,
    instanceType: fc.oneof(fc.constant('__valid__'), text),
    resources,
    topology,
    extraArgs: strings,
    env,
  },
  { requiredKeys: [] },
);
const deploymentSpec = partial({
  name,
  namespace: name,
  localQueue: name,
  priority: int32,
  model: fc.oneof(fc.constantFrom('/models/m', 'org/model', '-x', '--flag'), text),
  servedModelName: text,
  engine,
  roles: fc.array(role, { maxLength: 4 }),
  labels,
});
const instanceSpec = partial({
  name,
  namespace: name,
  localQueue: name,
  priority: int32,
  instanceType: fc.oneof(fc.constant('__valid__'), text),
  resources,
  command: text,
  image: text,
  env,
  sshPublicKeys: fc.oneof(fc.constant(['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4rT3vTt99Ox5kndS4HmgTrKBT8SKzhK4rhGkEVGlCI t']), strings),
  stop: fc.boolean(),
  labels,
});
const clusterQueueArb = partial({
  name,
  pool: text,
  cohort: text,
  queueingStrategy: fc.constantFrom('QUEUEING_STRATEGY_UNSPECIFIED', 'QUEUEING_STRATEGY_STRICT_FIFO', 'QUEUEING_STRATEGY_BEST_EFFORT_FIFO'),
  nominalQuota: uint64,
  borrowingLimit: uint64,
  lendingLimit: uint64,
  fairSharingWeight: double,
  withinClusterQueue: fc.constantFrom('PREEMPTION_POLICY_UNSPECIFIED', 'PREEMPTION_POLICY_NEVER', 'PREEMPTION_POLICY_LOWER_PRIORITY', 'PREEMPTION_POLICY_ANY'),
  reclaimWithinCohort: fc.constantFrom('PREEMPTION_POLICY_UNSPECIFIED', 'PREEMPTION_POLICY_NEVER', 'PREEMPTION_POLICY_LOWER_PRIORITY', 'PREEMPTION_POLICY_ANY'),
  packing: fc.oneof(fc.constantFrom('', 'binpack', 'spread'), text),
  managedBy: text,
});
const localQueueArb = partial({ namespace: name, name, clusterQueue: fc.oneof(fc.constant('__valid__'), name) });

/** Fresh valid names, so that requests which are otherwise valid get stored. */
const freshName = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/);

type Mutation = { readonly path: readonly string[]; readonly value: unknown };
const at = (path: string[], value: fc.Arbitrary<unknown>): fc.Arbitrary<Mutation> => value.map((v) => ({ path, value: v }));

/** `base` with each mutation's value written at its path (objects on the way created). */
function mutated<T>(base: T, mutations: readonly Mutation[]): T {
  const copy = JSON.parse(JSON.stringify(base)) as Record<string, unknown>;
  for (const { path, value } of mutations) {
    let node: Record<string, unknown> = copy;
    for (const key of path.slice(0, -1)) {
      if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
      node = node[key] as Record<string, unknown>;
    }
    node[path[path.length - 1]] = value;
  }
  return copy as T;
}

/** `__valid__` InstanceType placeholders become a real one, so some requests get past that check. */
function withValidType<T>(value: T): T {
  return withPlaceholder(value, instanceType);
}

/**
 * Every `__valid__` string in `value` becomes `real`. A reviver rather than a string replace: the
 * generated names can hold `$&` and other replacement patterns that `String.replace` expands.
 */
function withPlaceholder<T>(value: T, real: string): T {
  return JSON.parse(JSON.stringify(value), (_k, v: unknown) => (v === '__valid__' ? real : v)) as T;
}

// ---- the property ---------------------------------------------------------------------------

/** The call succeeds, or fails with a client error; INVALID_ARGUMENT must name a field. */
async function acceptsOrRefuses(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (e) {
    const err = e as ServiceError;
    if (!CLIENT_ERRORS.has(err.code)) throw new Error(`got ${status[err.code] ?? 'no status'}: ${err.details ?? err.message}`);
    if (err.code === status.INVALID_ARGUMENT) {
      const field = String(err.metadata?.get('gpufleet-field')[0] ?? '');
      if (!field) throw new Error(`INVALID_ARGUMENT without a field: ${err.details}`);
      const head = /^[A-Za-z_]+/.exec(field)?.[0] ?? field;
      if (!err.details.includes(head)) throw new Error(`the message does not name the field ${field}: ${err.details}`);
    }
  }
}

const md = () => ({ metadata: h.admin() });

describe('random and oversized requests get INVALID_ARGUMENT (or succeed), never INTERNAL', () => {
  it('SubmitWorkload', async () => {
    const s = h.clients.scheduling;
    await fc.assert(
      fc.asyncProperty(workloadSpec, async (spec) => {
        await acceptsOrRefuses(callUnary(s, s.submitWorkload, { spec: WorkloadSpec.fromPartial(spec as PartialOf<typeof WorkloadSpec>) }, md()));
      }),
      RUNS,
    );
  });

  it('DeleteWorkload, GetWorkload, ExplainPending', async () => {
    const s = h.clients.scheduling;
    await fc.assert(
      fc.asyncProperty(name, name, async (namespace, n) => {
        await acceptsOrRefuses(callUnary(s, s.deleteWorkload, { namespace, name: n }, md()));
        await acceptsOrRefuses(callUnary(s, s.getWorkload, { namespace, name: n }, md()));
        await acceptsOrRefuses(callUnary(s, s.explainPending, { namespace, name: n }, md()));
      }),
      RUNS,
    );
  });

  it('CreateDeployment and UpdateDeployment', async () => {
    const d = h.clients.deployments;
    await fc.assert(
      fc.asyncProperty(deploymentSpec, async (raw) => {
        const spec = ModelDeploymentSpec.fromPartial(withValidType(raw) as PartialOf<typeof ModelDeploymentSpec>);
        await acceptsOrRefuses(callUnary(d, d.createDeployment, { spec }, md()));
        await acceptsOrRefuses(callUnary(d, d.updateDeployment, { spec }, md()));
      }),
      RUNS,
    );
  });

  it('ScaleDeployment and DeleteDeployment', async () => {
    const d = h.clients.deployments;
    const spec = ModelDeploymentSpec.fromPartial({
      namespace: 'default',
      name: 'p1',
      model: '/models/m',
      localQueue: 'default',
      engine: { engine: 'vllm' },
      roles: [{ role: 'server', replicas: 1, size: 1, instanceType }],
    });
    await acceptsOrRefuses(callUnary(d, d.createDeployment, { spec }, md()));
    await fc.assert(
      fc.asyncProperty(name, name, text, uint32, async (namespace, n, r, replicas) => {
        await acceptsOrRefuses(callUnary(d, d.scaleDeployment, { namespace, name: n, role: r, replicas }, md()));
      }),
      RUNS,
    );
    await fc.assert(
      fc.asyncProperty(name, text, async (namespace, n) => {
        await acceptsOrRefuses(callUnary(d, d.deleteDeployment, { namespace, name: n }, md()));
      }),
      { numRuns: 20 },
    );
  });

  it('CreateInstance, SetInstanceStopped, DeleteInstance', async () => {
    const i = h.clients.instances;
    await fc.assert(
      fc.asyncProperty(instanceSpec, fc.boolean(), async (raw, stop) => {
        const spec = GPUInstanceSpec.fromPartial(withValidType(raw) as PartialOf<typeof GPUInstanceSpec>);
        await acceptsOrRefuses(callUnary(i, i.createInstance, { spec }, md()));
        await acceptsOrRefuses(callUnary(i, i.setInstanceStopped, { namespace: spec.namespace, name: spec.name, stop }, md()));
        await acceptsOrRefuses(callUnary(i, i.deleteInstance, { namespace: spec.namespace, name: spec.name }, md()));
      }),
      RUNS,
    );
  });

  it('PutClusterQueue, PutLocalQueue, DeleteLocalQueue, DeleteClusterQueue', async () => {
    const q = h.clients.queues;
    const pools = await callUnary(h.clients.capacity, h.clients.capacity.listPools, { pageSize: 0, pageToken: '' }, md());
    const pool = fc.oneof(fc.constant(pools.pools[0].name), text);
    await fc.assert(
      fc.asyncProperty(clusterQueueArb, pool, localQueueArb, async (rawCq, p, rawLq) => {
        const cq = ClusterQueue.fromPartial({ ...(rawCq as PartialOf<typeof ClusterQueue>), pool: p });
        const lq = LocalQueue.fromPartial(withPlaceholder(rawLq as PartialOf<typeof LocalQueue>, cq.name));
        await acceptsOrRefuses(callUnary(q, q.putClusterQueue, { clusterQueue: cq }, md()));
        await acceptsOrRefuses(callUnary(q, q.putLocalQueue, { localQueue: lq }, md()));
        await acceptsOrRefuses(callUnary(q, q.deleteLocalQueue, { namespace: lq.namespace, name: lq.name }, md()));
        await acceptsOrRefuses(callUnary(q, q.deleteClusterQueue, { name: cq.name }, md()));
        await acceptsOrRefuses(callUnary(q, q.getClusterQueue, { name: cq.name }, md()));
      }),
      RUNS,
    );
  });

  // Valid requests with one or two fields spoilt (or none): these get past the first checks into
  // admission, the store and the controllers.
  it('SubmitWorkload, CreateDeployment, CreateInstance: a valid request with a field or two changed', async () => {
    const { scheduling: s, deployments: d, instances: i } = h.clients;
    const workloadMutation = fc.oneof(
      at(['priority'], int32),
      at(['labels'], labels),
      at(['pool'], text),
      at(['podSets', '0', 'count'], uint32),
      at(['podSets', '0', 'size'], uint32),
      at(['podSets', '0', 'resources'], resources),
      at(['podSets', '0', 'topology'], topology),
      at(['localQueue'], name),
    );
    const roleMutation = fc.oneof(
      at(['roles', '0', 'replicas'], fc.oneof(fc.nat({ max: 3 }), uint32)),
      at(['roles', '0', 'size'], fc.oneof(fc.nat({ max: 3 }), uint32)),
      at(['roles', '0', 'resources'], resources),
      at(['roles', '0', 'extraArgs'], strings),
      at(['roles', '0', 'env'], env),
      at(['engine'], engine),
      at(['model'], fc.oneof(fc.constantFrom('/models/m', 'org/model', '-x'), text)),
      at(['servedModelName'], text),
      at(['labels'], labels),
    );
    const instanceMutation = fc.oneof(
      at(['resources'], resources),
      at(['command'], text),
      at(['image'], text),
      at(['env'], env),
      at(['sshPublicKeys'], strings),
      at(['stop'], fc.boolean()),
      at(['labels'], labels),
    );
    const base = { namespace: 'default', localQueue: 'default' };
    const resources1 = { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 };
    await fc.assert(
      fc.asyncProperty(freshName, fc.array(workloadMutation, { maxLength: 2 }), fc.array(roleMutation, { maxLength: 2 }), fc.array(instanceMutation, { maxLength: 2 }), async (n, wm, dm, im) => {
        const w = mutated({ ...base, name: n, podSets: [{ name: 'main', count: 1, size: 1, resources: resources1 }] }, wm);
        await acceptsOrRefuses(callUnary(s, s.submitWorkload, { spec: WorkloadSpec.fromPartial(w as PartialOf<typeof WorkloadSpec>) }, md()));
        const dep = mutated({ ...base, name: n, model: '/models/m', engine: { engine: 'vllm' }, roles: [{ role: 'server', replicas: 1, size: 1, resources: resources1 }] }, dm);
        await acceptsOrRefuses(callUnary(d, d.createDeployment, { spec: ModelDeploymentSpec.fromPartial(dep as PartialOf<typeof ModelDeploymentSpec>) }, md()));
        const inst = mutated({ ...base, name: n, resources: resources1, sshPublicKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4rT3vTt99Ox5kndS4HmgTrKBT8SKzhK4rhGkEVGlCI t'] }, im);
        await acceptsOrRefuses(callUnary(i, i.createInstance, { spec: GPUInstanceSpec.fromPartial(inst as PartialOf<typeof GPUInstanceSpec>) }, md()));
      }),
      RUNS,
    );
    // What was stored goes through admission and the controllers: none of their passes fails.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const metrics = await (await fetch(`http://127.0.0.1:${h.service.opsPort}/metrics`)).text();
    expect(metrics.split('\n').filter((l) => l.startsWith('gpufleet_reconcile_errors_total') && !l.endsWith(' 0'))).toEqual([]);
  });

  it('List* with random filters, page sizes and tokens', async () => {
    const { capacity: c, scheduling: s, queues: q, deployments: d, instances: i } = h.clients;
    await fc.assert(
      fc.asyncProperty(text, int32, text, labels, async (filter, pageSize, pageToken, selector) => {
        await acceptsOrRefuses(callUnary(c, c.listNodes, { pool: filter, labelSelector: selector, pageSize, pageToken }, md()));
        await acceptsOrRefuses(callUnary(c, c.listPools, { pageSize, pageToken }, md()));
        await acceptsOrRefuses(callUnary(c, c.listInstanceTypes, { pool: filter, pageSize, pageToken }, md()));
        await acceptsOrRefuses(callUnary(c, c.getNode, { name: filter }, md()));
        await acceptsOrRefuses(callUnary(c, c.getInstanceType, { name: filter }, md()));
        await acceptsOrRefuses(callUnary(s, s.listWorkloads, { namespace: filter, phase: 'WORKLOAD_PHASE_UNSPECIFIED' as never, clusterQueue: filter, pageSize, pageToken }, md()));
        await acceptsOrRefuses(callUnary(q, q.listClusterQueues, { pageSize, pageToken }, md()));
        await acceptsOrRefuses(callUnary(q, q.listLocalQueues, { namespace: filter, pageSize, pageToken }, md()));
        await acceptsOrRefuses(callUnary(q, q.listCohorts, { pageSize, pageToken }, md()));
        await acceptsOrRefuses(callUnary(d, d.listDeployments, { namespace: filter, pageSize, pageToken }, md()));
        await acceptsOrRefuses(callUnary(i, i.listInstances, { namespace: filter, pageSize, pageToken }, md()));
      }),
      { numRuns: 40 },
    );
  });
});

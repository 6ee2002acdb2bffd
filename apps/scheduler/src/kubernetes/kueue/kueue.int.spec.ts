// The Kueue mirror end to end: a real nats-server and scheduler (KUEUE=true) against the Kubernetes
// API simulator, with kubectl as a user would run it. The test plays Kueue: it writes Workloads
// whose gpufleet-placement check is Pending and reads gpufleet's answer.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { callUnary } from '@gpufleet/grpc-kit';
import { runKubectl, startKubeApiServer, type KubectlRun, waitFor, type KubeApiServer, type KubeObject } from '@gpufleet/testing';
import { SchedulerHarness } from '../../__fixtures__/scheduler-harness';
import { clusterQueue } from '../../__fixtures__/requests';

jest.setTimeout(60_000);

const GROUP = 'kueue.x-k8s.io';
const VERSION = 'v1beta2';
const SELECTOR = 'app.kubernetes.io/managed-by=gpufleet';
const WAIT = { timeoutMs: 15_000, intervalMs: 50 };

type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

let api: KubeApiServer;
let h: SchedulerHarness;
let custom: CustomObjectsApi;
let dir: string;

const kubectl = (...args: string[]): Promise<KubectlRun> => runKubectl(api.kubeconfigPath, join(dir, 'cache'), args);

async function list(plural: string): Promise<Obj[]> {
  const res = (await custom.listCustomObjectForAllNamespaces({ group: GROUP, version: VERSION, plural, labelSelector: SELECTOR })) as { items: Obj[] };
  return res.items;
}

async function listWhen(plural: string, ok: (items: Obj[]) => boolean): Promise<Obj[]> {
  return waitFor(
    `${plural} to match`,
    async () => {
      const items = await list(plural);
      return ok(items) ? items : undefined;
    },
    WAIT,
  );
}

const names = (items: Obj[]): string[] => items.map((o) => (o.metadata?.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata!.name!)).sort();

function workload(name: string, gpus: number, count = 1): KubeObject {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Workload',
    metadata: { name, namespace: 'team-k' },
    spec: {
      queueName: 'research',
      podSets: [{ name: 'main', count, template: { spec: { containers: [{ name: 'c', image: 'x', resources: { requests: { 'gpufleet.io/nvidia-gpu': String(gpus), cpu: '2', memory: '4Gi' } } }] } } }],
    },
    status: { admissionChecks: [{ name: 'gpufleet-placement', state: 'Pending', lastTransitionTime: new Date().toISOString(), message: '' }] },
  };
}

async function check(name: string): Promise<{ state: string; message: string } | undefined> {
  const wl = (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: 'team-k', plural: 'workloads', name })) as Obj;
  return (wl.status?.admissionChecks as Array<{ name: string; state: string; message: string }> | undefined)?.find((c) => c.name === 'gpufleet-placement');
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpufleet-kueue-'));
  api = await startKubeApiServer();
  h = await SchedulerHarness.start({ env: { KUEUE: 'true', KUBECONFIG: api.kubeconfigPath } });
  const kc = new KubeConfig();
  kc.loadFromOptions(api.kubeConfig());
  custom = kc.makeApiClient(CustomObjectsApi);
});

afterAll(async () => {
  await h?.stop();
  await api?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('Kueue mirror', () => {
  let pool = '';
  let defaultQueue = '';

  it('a ResourceFlavor per pool, the default ClusterQueue, and the gpufleet-placement AdmissionCheck (Active)', async () => {
    const pools = await callUnary(h.clients.capacity, h.clients.capacity.listPools, { pageSize: 0, pageToken: '' }, { metadata: h.admin() });
    pool = pools.pools[0].name;
    const queues = await callUnary(h.clients.queues, h.clients.queues.listClusterQueues, { pageSize: 0, pageToken: '' }, { metadata: h.admin() });
    const cq = queues.clusterQueues.find((q) => q.pool === pool)!;
    defaultQueue = cq.name;

    const flavors = await listWhen('resourceflavors', (items) => items.length === 1);
    expect(flavors[0].metadata!.name).toBe(pool);
    expect((flavors[0].spec!.nodeLabels as Record<string, string>)['nvidia.com/gpu.product']).toBeTruthy();

    const [kcq] = await listWhen('clusterqueues', (items) => items.some((q) => q.metadata!.name === defaultQueue));
    expect(kcq.spec).toMatchObject({
      namespaceSelector: {},
      resourceGroups: [
        {
          coveredResources: ['gpufleet.io/credits', 'gpufleet.io/nvidia-gpu', 'cpu', 'memory'],
          flavors: [
            {
              name: pool,
              resources: [
                { name: 'gpufleet.io/credits', nominalQuota: String(cq.nominalQuota) },
                { name: 'gpufleet.io/nvidia-gpu', nominalQuota: String(Math.floor(cq.nominalQuota / 1_600_000)) },
                { name: 'cpu', nominalQuota: expect.stringMatching(/^\d+$/) },
                { name: 'memory', nominalQuota: expect.stringMatching(/^\d+Mi$/) },
              ],
            },
          ],
        },
      ],
      admissionChecksStrategy: { admissionChecks: [{ name: 'gpufleet-placement' }] },
    });

    const checks = await waitFor(
      'the AdmissionCheck to be Active',
      async () => {
        const items = await list('admissionchecks');
        const conditions = (items[0]?.status?.conditions ?? []) as Array<{ type: string; status: string }>;
        return conditions.some((c) => c.type === 'Active' && c.status === 'True') ? items : undefined;
      },
      WAIT,
    );
    expect(checks.map((c) => [c.metadata!.name, c.spec!.controllerName])).toEqual([['gpufleet-placement', 'gpufleet.io/placement']]);
  });

  it('a ClusterQueue with a cohort (replacing the default one) and a LocalQueue made through QueueService appear, namespace created; kubectl lists them', async () => {
    const admin = { metadata: h.admin() };
    await callUnary(h.clients.queues, h.clients.queues.putClusterQueue, { clusterQueue: clusterQueue(pool, { name: 'research', cohort: 'lab', nominalQuota: 3_200_000, borrowingLimit: 1_600_000 }) }, admin);
    await callUnary(h.clients.queues, h.clients.queues.putLocalQueue, { localQueue: { namespace: 'team-k', name: 'research', clusterQueue: 'research' } }, admin);
    // The pool's own queue replaces its default one, in Kueue too.
    const cqs = await listWhen('clusterqueues', (items) => names(items).includes('research') && !names(items).includes(defaultQueue));
    expect(cqs.find((q) => q.metadata!.name === 'research')!.spec).toMatchObject({
      cohortName: 'lab',
      resourceGroups: [{ flavors: [{ name: pool, resources: [{ name: 'gpufleet.io/credits', nominalQuota: '3200000', borrowingLimit: '1600000' }, { name: 'gpufleet.io/nvidia-gpu', nominalQuota: '2', borrowingLimit: '1' }, { name: 'cpu' }, { name: 'memory' }] }] }],
    });
    const lqs = await listWhen('localqueues', (items) => names(items).includes('team-k/research'));
    expect(lqs.find((q) => q.metadata!.name === 'research')!.spec).toEqual({ clusterQueue: 'research' });

    const got = await kubectl('get', 'clusterqueues,localqueues', '-A');
    expect(got.stderr).toBe('');
    expect(got.code).toBe(0);
    expect(got.stdout).toContain('clusterqueue.kueue.x-k8s.io/research');
    expect(got.stdout).toMatch(/team-k\s+localqueue\.kueue\.x-k8s\.io\/research\s+research/);
    const ns = await kubectl('get', 'namespace', 'team-k', '-o', 'name');
    expect(ns.stdout.trim()).toBe('namespace/team-k');
  });

  it('a Workload with a Pending gpufleet-placement check gets Ready when gpufleet can place it, naming the nodes', async () => {
    api.put(workload('fits', 4, 2));
    const c = await waitFor('the check to be Ready', async () => ((await check('fits'))?.state === 'Ready' ? check('fits') : undefined), WAIT);
    expect(c!.message).toMatch(/^gpufleet can place the 2 pods on nodes? gpu-[01](, gpu-1)?$/);
  });

  it('one that does not fit stays Pending with gpufleet\'s explanation', async () => {
    api.put(workload('too-big', 8, 3));
    const c = await waitFor('the check to say why', async () => {
      const got = await check('too-big');
      return got?.message ? got : undefined;
    }, WAIT);
    expect(c.state).toBe('Pending');
    expect(c.message).toMatch(/^gpufleet cannot place it in pool .*: NoFit: .*3 pods/);
  });

  it('queues deleted in gpufleet disappear from Kueue', async () => {
    const admin = { metadata: h.admin() };
    await callUnary(h.clients.queues, h.clients.queues.deleteLocalQueue, { namespace: 'team-k', name: 'research' }, admin);
    await callUnary(h.clients.queues, h.clients.queues.deleteClusterQueue, { name: 'research' }, admin);
    await listWhen('localqueues', (items) => !names(items).includes('team-k/research'));
    // Deleting the pool's own queue brings its default queue back, in Kueue too.
    await listWhen('clusterqueues', (items) => !names(items).includes('research') && names(items).includes(defaultQueue));
    const got = await kubectl('get', 'clusterqueues,localqueues', '-A');
    expect(got.stdout).not.toContain('clusterqueue.kueue.x-k8s.io/research');
  });
});

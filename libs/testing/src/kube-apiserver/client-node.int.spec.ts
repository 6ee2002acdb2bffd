// The simulator checked with the official JavaScript client, as gpufleet's Kubernetes runtime uses it.
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  V1ConfigMap,
  V1Pod,
} from '@kubernetes/client-node';
import { KubeApiServer, startKubeApiServer } from './server';

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function statusOf(promise: Promise<unknown>): Promise<{ code: number; reason: string }> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiException) {
      // The generated client drops the body of a 401 (its only declared error) and keeps the rest as text.
      if (err.body === undefined) return { code: err.code, reason: err.code === 401 ? 'Unauthorized' : 'no body' };
      const body = (typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as { reason: string };
      return { code: err.code, reason: body.reason };
    }
    throw err;
  }
  throw new Error('the request succeeded');
}

describe('kube-apiserver simulator, driven by @kubernetes/client-node', () => {
  let api: KubeApiServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let objects: KubernetesObjectApi;

  beforeAll(async () => {
    api = await startKubeApiServer();
    kc = new KubeConfig();
    kc.loadFromOptions(api.kubeConfig());
    core = kc.makeApiClient(CoreV1Api);
    objects = KubernetesObjectApi.makeApiClient(kc);
  });

  afterAll(() => api.close());

  it('creates pods, patches them with SSA and a strategic merge, and keeps status apart', async () => {
    const pod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'engine-1', namespace: 'default', labels: { app: 'engine' } },
      spec: { containers: [{ name: 'vllm', image: 'vllm:1', env: [{ name: 'A', value: '1' }] }] },
    };
    const created = await core.createNamespacedPod({ namespace: 'default', body: pod });
    expect(created.metadata?.uid).toBeTruthy();
    expect(created.metadata?.generation).toBe(1);
    expect(created.status?.phase).toBe('Pending');

    const applied = await objects.patch<V1Pod>(
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'engine-1', namespace: 'default' }, spec: { containers: [{ name: 'vllm', image: 'vllm:2' }] } },
      undefined,
      undefined,
      'gpufleet-scheduler',
      true,
      PatchStrategy.ServerSideApply,
    );
    expect(applied.spec?.containers[0].image).toBe('vllm:2');
    expect(applied.spec?.containers[0].env).toEqual([{ name: 'A', value: '1' }]);
    expect(applied.metadata?.generation).toBe(2);
    expect(applied.metadata?.managedFields?.map((m) => `${m.manager}/${m.operation}`)).toEqual(expect.arrayContaining(['gpufleet-scheduler/Apply']));

    const merged = await core.patchNamespacedPod(
      { name: 'engine-1', namespace: 'default', body: { spec: { containers: [{ name: 'vllm', env: [{ name: 'B', value: '2' }] }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    expect(merged.spec?.containers[0].env?.map((e) => e.name)).toEqual(['A', 'B']);

    // Status written through the main resource is ignored; through /status it is the only change.
    const ignored = await core.patchNamespacedPod({ name: 'engine-1', namespace: 'default', body: [{ op: 'add', path: '/status/phase', value: 'Running' }] });
    expect(ignored.status?.phase).toBe('Pending');
    const running = await core.patchNamespacedPodStatus({ name: 'engine-1', namespace: 'default', body: [{ op: 'replace', path: '/status/phase', value: 'Running' }] });
    expect(running.status?.phase).toBe('Running');
    expect(running.metadata?.generation).toBe(merged.metadata?.generation);
  });

  it('answers Status errors: 404 namespace, 409 exists, 409 stale replace, 422 invalid, 401', async () => {
    const cm = (name: string, namespace = 'default'): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { a: '1' } });
    expect(await statusOf(core.createNamespacedConfigMap({ namespace: 'nowhere', body: cm('x', 'nowhere') }))).toEqual({ code: 404, reason: 'NotFound' });
    const first = await core.createNamespacedConfigMap({ namespace: 'default', body: cm('settings') });
    expect(await statusOf(core.createNamespacedConfigMap({ namespace: 'default', body: cm('settings') }))).toEqual({ code: 409, reason: 'AlreadyExists' });
    await core.replaceNamespacedConfigMap({ name: 'settings', namespace: 'default', body: { ...first, data: { a: '2' } } });
    expect(await statusOf(core.replaceNamespacedConfigMap({ name: 'settings', namespace: 'default', body: { ...first, data: { a: '3' } } }))).toEqual({ code: 409, reason: 'Conflict' });
    expect(await statusOf(core.createNamespacedConfigMap({ namespace: 'default', body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} } }))).toEqual({ code: 422, reason: 'Invalid' });
    expect(await statusOf(core.createNamespacedConfigMap({ namespace: 'default', body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'y' } } as V1ConfigMap }))).toEqual({ code: 422, reason: 'Invalid' });

    const stranger = new KubeConfig();
    const options = api.kubeConfig();
    stranger.loadFromOptions({ ...options, users: [{ name: options.users[0].name, token: 'wrong' }] });
    expect(await statusOf(stranger.makeApiClient(CoreV1Api).listNamespace())).toEqual({ code: 401, reason: 'Unauthorized' });
  });

  it('pages lists with limit and continue', async () => {
    for (const n of [1, 2, 3, 4, 5]) await core.createNamespacedServiceAccount({ namespace: 'kube-system', body: { metadata: { name: `sa-${n}` } } });
    const page1 = await core.listNamespacedServiceAccount({ namespace: 'kube-system', limit: 2 });
    expect(page1.items.map((s) => s.metadata?.name)).toEqual(['sa-1', 'sa-2']);
    expect(page1.metadata?.remainingItemCount).toBe(3);
    const page2 = await core.listNamespacedServiceAccount({ namespace: 'kube-system', limit: 2, _continue: page1.metadata?._continue });
    expect(page2.items.map((s) => s.metadata?.name)).toEqual(['sa-3', 'sa-4']);
    const selected = await core.listNamespacedServiceAccount({ namespace: 'kube-system', fieldSelector: 'metadata.name!=sa-1', labelSelector: '!missing' });
    expect(selected.items).toHaveLength(4);
    await core.deleteCollectionNamespacedServiceAccount({ namespace: 'kube-system', fieldSelector: 'metadata.name!=sa-5' });
    expect((await core.listNamespacedServiceAccount({ namespace: 'kube-system' })).items.map((s) => s.metadata?.name)).toEqual(['sa-5']);
  });

  it('runs an informer through add, update, delete and a re-list after 410', async () => {
    const list = () => core.listNamespacedConfigMap({ namespace: 'watched' });
    await core.createNamespace({ body: { metadata: { name: 'watched' } } });
    const informer = makeInformer(kc, '/api/v1/namespaces/watched/configmaps', list);
    const seen: string[] = [];
    informer.on('add', (o) => seen.push(`add ${o.metadata?.name} ${JSON.stringify(o.data)}`));
    informer.on('update', (o) => seen.push(`update ${o.metadata?.name} ${JSON.stringify(o.data)}`));
    informer.on('delete', (o) => seen.push(`delete ${o.metadata?.name}`));
    await informer.start();
    try {
      await core.createNamespacedConfigMap({ namespace: 'watched', body: { metadata: { name: 'one' }, data: { v: '1' } } });
      await until('add', () => (seen.includes('add one {"v":"1"}') ? true : undefined));
      await core.patchNamespacedConfigMap({ name: 'one', namespace: 'watched', body: { data: { v: '2' } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
      await until('update', () => (seen.includes('update one {"v":"2"}') ? true : undefined));
      await core.deleteNamespacedConfigMap({ name: 'one', namespace: 'watched' });
      await until('delete', () => (seen.includes('delete one') ? true : undefined));

      const listsBefore = api.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/watched/configmaps') && !r.query.includes('watch')).length;
      api.store.compact();
      api.expireWatches();
      await until('a re-list after 410', () =>
        api.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/watched/configmaps') && !r.query.includes('watch')).length > listsBefore ? true : undefined,
      );
      await core.createNamespacedConfigMap({ namespace: 'watched', body: { metadata: { name: 'two' }, data: { v: '1' } } });
      await until('add after re-list', () => (seen.includes('add two {"v":"1"}') ? true : undefined));
    } finally {
      await informer.stop();
    }
  });

  it('answers a watch from a compacted resourceVersion with a 410 ERROR event', async () => {
    const small = await startKubeApiServer({ historyLimit: 3, tls: false, token: 'plain' });
    try {
      const local = new KubeConfig();
      local.loadFromOptions(small.kubeConfig());
      const v1 = local.makeApiClient(CoreV1Api);
      const start = (await v1.listNamespacedConfigMap({ namespace: 'default' })).metadata?.resourceVersion;
      for (const n of [1, 2, 3, 4, 5]) await v1.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `c${n}` } } });
      const res = await fetch(`${small.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${start}`, { headers: { authorization: 'Bearer plain' } });
      expect(res.status).toBe(200);
      const event = JSON.parse((await res.text()).trim()) as { type: string; object: { code: number; kind: string } };
      expect(event).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410 } });

      const recent = await fetch(`${small.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1&allowWatchBookmarks=true`, { headers: { authorization: 'Bearer plain' } });
      const lines = (await recent.text()).trim().split('\n').map((l) => JSON.parse(l) as { type: string });
      expect(lines.filter((l) => l.type === 'ADDED')).toHaveLength(5);
      expect(lines.filter((l) => l.type === 'BOOKMARK').length).toBeLessThanOrEqual(1); // one a second; the watch ends after one

      const legacy = await fetch(`${small.url}/api/v1/watch/namespaces/default/configmaps/c5?timeoutSeconds=1`, { headers: { authorization: 'Bearer plain' } });
      expect((await legacy.text()).trim().split('\n').map((l) => (JSON.parse(l) as { type: string }).type)).toEqual(['ADDED']);
    } finally {
      await small.close();
    }
  });

  it('collects dependents when their owner goes, and orphans them when asked', async () => {
    const owner = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'owner' } } });
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid ?? '' };
    await core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 'owned', ownerReferences: [ref] } } });
    await core.deleteNamespacedConfigMap({ name: 'owner', namespace: 'default' });
    expect(await statusOf(core.readNamespacedSecret({ name: 'owned', namespace: 'default' }))).toEqual({ code: 404, reason: 'NotFound' });

    const keeper = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'keeper' } } });
    await core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 'kept', ownerReferences: [{ ...ref, name: 'keeper', uid: keeper.metadata?.uid ?? '' }] } } });
    await core.deleteNamespacedConfigMap({ name: 'keeper', namespace: 'default', propagationPolicy: 'Orphan' });
    const kept = await core.readNamespacedSecret({ name: 'kept', namespace: 'default' });
    expect(kept.metadata?.ownerReferences).toBeUndefined();

    await core.createNamespace({ body: { metadata: { name: 'doomed' } } });
    await core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'inside', finalizers: ['gpufleet.io/x'] } } });
    await core.deleteNamespace({ name: 'doomed' });
    expect(await statusOf(core.readNamespacedConfigMap({ name: 'inside', namespace: 'doomed' }))).toEqual({ code: 404, reason: 'NotFound' });
  });
});

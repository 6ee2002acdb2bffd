// The gpufleet.io custom resources against the Kubernetes API simulator, driven by the real
// kubectl: the chart's CRDs applied with `kubectl apply --server-side`, the scheduler (real
// nats-server) mirroring its InstanceTypes.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { Buckets, GPUInstanceSpec, ModelDeploymentSpec, NodeInventory } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { node, runKubectl, startKubeApiServer, waitFor, type KubeApiServer, type KubectlRun } from '@gpufleet/testing';
import { SchedulerHarness } from '../../__fixtures__/scheduler-harness';

const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const CRDS = resolve(__dirname, '../../../../../charts/gpufleet/crds');

describe('gpufleet.io custom resources (KUBE_CUSTOM_RESOURCES=true)', () => {
  let api: KubeApiServer;
  let h: SchedulerHarness;
  let dir: string;

  const args = (...rest: string[]): string[] => ['--kubeconfig', api.kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...rest];

  const kubectl = (...rest: string[]): Promise<KubectlRun> => runKubectl(api.kubeconfigPath, join(dir, 'cache'), rest);

  async function ok(...rest: string[]): Promise<string> {
    const run = await kubectl(...rest);
    if (run.code !== 0) throw new Error(`kubectl ${rest.join(' ')} exited ${run.code}: ${run.stderr}`);
    return run.stdout;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kubecrs-'));
    api = await startKubeApiServer();
    await ok('apply', '--server-side', '-f', CRDS);
    h = await SchedulerHarness.start({ env: { KUBE_CUSTOM_RESOURCES: 'true', KUBECONFIG: api.kubeconfigPath } });
  }, 60_000);

  afterAll(async () => {
    await h?.stop();
    await api?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('mirrors InstanceTypes: `kubectl get it` shows live numbers and `-w` streams capacity changes', async () => {
    const table = await waitFor(
      'the leader to write the InstanceType resources',
      async () => {
        // Spec and status are two writes: wait for the row to have both.
        const out = await ok('get', 'instancetypes');
        const row = out.split('\n').find((l) => /\.8x\s/.test(l));
        return row && /\s8\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\S+\s*$/.test(row) ? out : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    const lines = table.trim().split('\n');
    // The chart's printer columns, filled from spec and status.
    const header = lines[0].split(/\s+/);
    expect(header).toEqual(['NAME', 'POOL', 'ACCELERATOR', 'UNIT', 'WHOLE', 'SHARED', 'SLICED-MIB', 'READY-NODES', 'CREDITS', 'AGE']);
    // Cells counted from the right: the accelerator product has spaces.
    const fromRight = (name: string): number => header.length - header.indexOf(name);
    const cell = (c: string[], name: string): string => c[c.length - fromRight(name)];
    const row8 = lines.find((l) => /\.8x\s/.test(l))!;
    const cells = row8.split(/\s+/);
    expect(cell(cells, 'UNIT')).toBe('8');
    const free8 = Number(cell(cells, 'WHOLE'));
    expect(free8).toBeGreaterThan(0);
    // Every InstanceType of the model is there, with its status.
    const names = (await ok('get', 'it', '-o', 'jsonpath={.items[*].metadata.name}')).split(' ').sort();
    expect(names.length).toBeGreaterThan(1);
    const status = JSON.parse(await ok('get', 'it', cells[0], '-o', 'jsonpath={.status}')) as { capacity?: unknown; revision?: number };
    expect(status.capacity).toBeDefined();
    const managers = await ok('get', 'it', cells[0], '--show-managed-fields', '-o', 'jsonpath={.metadata.managedFields[*].manager}');
    expect(managers).toContain('gpufleet');

    const watch = spawn(KUBECTL, args('get', 'instancetypes', '-w'), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    watch.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor('kubectl get -w to list the rows', async () => (/\.8x\s/.test(out) ? true : undefined), { timeoutMs: 10_000, intervalMs: 25 });
      const before = out.length;
      // One more 8-GPU node: the .8x InstanceType has one more whole unit.
      const nodes = await KvStore.open(h.nc.jetstream(), Buckets.nodes(h.cluster), NodeInventory);
      await nodes.put('gpu-2', { ...node('gpu-2'), cluster: h.cluster });
      const grown = (): boolean =>
        out
          .slice(before)
          .split('\n')
          .map((l) => l.trim().split(/\s+/))
          .some((c) => c[0] === cells[0] && Number(cell(c, 'WHOLE')) > free8);
      await waitFor('a new row with more free accelerators', async () => (grown() ? true : undefined), { timeoutMs: 10_000, intervalMs: 25 });
    } finally {
      watch.kill('SIGKILL');
    }
  }, 60_000);

  it('keeps ModelDeployment objects and gpufleet deployments as one', async () => {
    const oneGpu = await waitFor('a 1-GPU InstanceType', async () => (await ok('get', 'it', '-o', 'jsonpath={.items[*].metadata.name}')).split(' ').find((t) => t.endsWith('.1x')), { timeoutMs: 20_000, intervalMs: 200 });
    await ok('create', 'namespace', 'team-a');
    const manifest = (name: string, instanceType: string) =>
      ['apiVersion: gpufleet.io/v1', 'kind: ModelDeployment', `metadata: { name: ${name}, namespace: team-a }`, 'spec:', '  model: /models/small', '  engine: { engine: vllm }', '  roles:', `    - { role: server, replicas: 1, instanceType: ${instanceType} }`, ''].join('\n');
    const file = join(dir, 'md.yaml');
    writeFileSync(file, manifest('small', oneGpu) + '---\n' + manifest('broken', 'no-such-type.1x'));
    await ok('apply', '-f', file);

    const get = (name: string) => callUnary(h.clients.deployments, h.clients.deployments.getDeployment, { namespace: 'team-a', name }, { metadata: h.admin() });
    const found = await waitFor('the applied object to become a gpufleet deployment', () => get('small').catch(() => undefined), { timeoutMs: 15_000, intervalMs: 100 });
    expect(found.deployment?.spec?.roles[0].instanceType).toBe(oneGpu);
    expect(found.deployment?.spec?.model).toBe('/models/small');
    const jp = (name: string, path: string) => ok('get', 'md', name, '-n', 'team-a', '-o', `jsonpath=${path}`);
    let last = '';
    await waitFor('status Accepted=True and the finalizer', async () => ((last = await jp('small', '{.status.conditions[?(@.type=="Accepted")].status} {.metadata.finalizers[*]} {.metadata.annotations.gpufleet\\.io/record-uid}')) === `True gpufleet.io/deployment ${found.deployment!.uid}` ? true : undefined), { timeoutMs: 10_000, intervalMs: 100 }).catch((e: Error) => {
      throw new Error(`${e.message}; last: ${last}; object: ${JSON.stringify(api.resources.get(api.kinds.find('gpufleet.io', 'v1', 'modeldeployments')!, 'team-a', 'small'))}`);
    });
    expect(Number(await jp('small', '{.status.observedGeneration}'))).toBe(Number(await jp('small', '{.metadata.generation}')));

    // A spec gpufleet refuses: Accepted=False with the refusal, no deployment, no crash.
    const refused = await waitFor('Accepted=False on the refused spec', async () => {
      const out = await jp('broken', '{.status.conditions[?(@.type=="Accepted")].status}|{.status.conditions[?(@.type=="Accepted")].message}');
      return out.startsWith('False|') ? out : undefined;
    }, { timeoutMs: 20_000, intervalMs: 100 });
    expect(refused).toContain('no-such-type.1x');
    await expect(get('broken')).rejects.toMatchObject({ code: GrpcStatus.NOT_FOUND });

    // Spec edits are updates.
    writeFileSync(file, manifest('small', oneGpu).replace('/models/small', '/models/small-v2'));
    await ok('apply', '-f', file);
    await waitFor('the edit to reach gpufleet', async () => ((await get('small')).deployment?.spec?.model === '/models/small-v2' ? true : undefined), { timeoutMs: 10_000, intervalMs: 100 });

    // A deployment made through gRPC appears as an object.
    const spec = ModelDeploymentSpec.fromJSON({ name: 'from-grpc', namespace: 'team-a', model: '/models/g', engine: { engine: 'vllm' }, roles: [{ role: 'server', replicas: 1, instanceType: oneGpu }] });
    await callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec }, { metadata: h.admin() });
    await waitFor('kubectl get md -A to list it', async () => (/team-a\s+from-grpc\s/.test(await ok('get', 'md', '-A')) ? true : undefined), { timeoutMs: 10_000, intervalMs: 100 });
    expect(await jp('from-grpc', '{.metadata.annotations.gpufleet\\.io/created-by} {.spec.model}')).toBe('gpufleet /models/g');

    // kubectl delete: the finalizer holds the object until gpufleet has deleted the deployment.
    await ok('delete', 'md', 'small', '-n', 'team-a', '--wait=false');
    await waitFor('the deployment to be gone from gRPC', () => get('small').then(() => undefined, (e: { code?: number }) => (e.code === GrpcStatus.NOT_FOUND ? true : undefined)), { timeoutMs: 20_000, intervalMs: 100 });
    await waitFor('the object to be gone', async () => ((await kubectl('get', 'md', 'small', '-n', 'team-a')).stderr.includes('NotFound') ? true : undefined), { timeoutMs: 10_000, intervalMs: 100 });

    // Deleted through gRPC: the object goes too (its finalizer released once the record is gone).
    await callUnary(h.clients.deployments, h.clients.deployments.deleteDeployment, { namespace: 'team-a', name: 'from-grpc' }, { metadata: h.admin() });
    await waitFor('the gRPC-deleted deployment\'s object to be gone', async () => ((await kubectl('get', 'md', 'from-grpc', '-n', 'team-a')).stderr.includes('NotFound') ? true : undefined), { timeoutMs: 20_000, intervalMs: 100 });
    expect(await ok('get', 'md', '-n', 'team-a', '-o', 'jsonpath={.items[*].metadata.name}')).toBe('broken');
  }, 90_000);

  it('keeps GPUInstance objects and gpufleet instances as one', async () => {
    const oneGpu = await waitFor('a 1-GPU InstanceType', async () => (await ok('get', 'it', '-o', 'jsonpath={.items[*].metadata.name}')).split(' ').find((t) => t.endsWith('.1x')), { timeoutMs: 20_000, intervalMs: 200 });
    await kubectl('create', 'namespace', 'team-b');
    const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test@kubecrs';
    const manifest = (stop: boolean, image = 'ubuntu:24.04') =>
      ['apiVersion: gpufleet.io/v1', 'kind: GPUInstance', 'metadata: { name: box, namespace: team-b }', 'spec:', `  instanceType: ${oneGpu}`, `  image: ${image}`, `  stop: ${stop}`, `  sshPublicKeys: ['${KEY}']`, ''].join('\n');
    const file = join(dir, 'gi.yaml');
    writeFileSync(file, manifest(false));
    await ok('apply', '-f', file);
    const get = (name: string) => callUnary(h.clients.instances, h.clients.instances.getInstance, { namespace: 'team-b', name }, { metadata: h.admin() });
    const found = await waitFor('the applied object to become a gpufleet instance', () => get('box').catch(() => undefined), { timeoutMs: 15_000, intervalMs: 100 });
    expect(found.instance?.spec?.instanceType).toBe(oneGpu);
    const jp = (name: string, path: string) => ok('get', 'gi', name, '-n', 'team-b', '-o', `jsonpath=${path}`);
    await waitFor('Accepted=True', async () => ((await jp('box', '{.status.conditions[?(@.type=="Accepted")].status}')) === 'True' ? true : undefined), { timeoutMs: 10_000, intervalMs: 100 });

    // spec.stop is SetInstanceStopped; any other edit is refused in Accepted.
    writeFileSync(file, manifest(true));
    await ok('apply', '-f', file);
    await waitFor('the stop to reach gpufleet', async () => ((await get('box')).instance?.spec?.stop === true ? true : undefined), { timeoutMs: 10_000, intervalMs: 100 });
    writeFileSync(file, manifest(true, 'debian:13'));
    await ok('apply', '-f', file);
    const refused = await waitFor('Accepted=False on an image edit', async () => {
      const out = await jp('box', '{.status.conditions[?(@.type=="Accepted")].status}|{.status.conditions[?(@.type=="Accepted")].message}');
      return out.startsWith('False|') ? out : undefined;
    }, { timeoutMs: 20_000, intervalMs: 100 });
    expect(refused).toContain('spec.stop');
    // The refusal stays while the instance's own status changes (it once flipped back to True).
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await jp('box', '{.status.conditions[?(@.type=="Accepted")].status}')).toBe('False');
    expect((await get('box')).instance?.spec?.image).toBe('ubuntu:24.04');

    // Made through gRPC: listed by kubectl.
    const spec = GPUInstanceSpec.fromJSON({ name: 'from-grpc', namespace: 'team-b', instanceType: oneGpu, image: 'ubuntu:24.04', stop: true, sshPublicKeys: [KEY] });
    await callUnary(h.clients.instances, h.clients.instances.createInstance, { spec }, { metadata: h.admin() });
    await waitFor('kubectl get gi -A to list it', async () => (/team-b\s+from-grpc\s/.test(await ok('get', 'gi', '-A')) ? true : undefined), { timeoutMs: 10_000, intervalMs: 100 });

    await ok('delete', 'gi', 'box', '-n', 'team-b', '--wait=false');
    await waitFor('the instance to be gone from gRPC', () => get('box').then(() => undefined, (e: { code?: number }) => (e.code === GrpcStatus.NOT_FOUND ? true : undefined)), { timeoutMs: 20_000, intervalMs: 100 });
    await waitFor('the object to be gone', async () => ((await kubectl('get', 'gi', 'box', '-n', 'team-b')).stderr.includes('NotFound') ? true : undefined), { timeoutMs: 10_000, intervalMs: 100 });
  }, 90_000);
});

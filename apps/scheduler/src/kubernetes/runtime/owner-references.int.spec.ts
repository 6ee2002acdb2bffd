// Pods and Services of a deployment applied as a ModelDeployment carry an owner reference to that
// object: a real nats-server and scheduler (RUNTIME=kubernetes, KUBE_CUSTOM_RESOURCES=true, each
// workload in the Kubernetes namespace of its gpufleet namespace) against the API simulator,
// driven by kubectl.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';
import { callUnary } from '@gpufleet/grpc-kit';
import { waitFor } from '@gpufleet/testing';
import { KubeRuntimeHarness } from '../../__fixtures__/kube-runtime-harness';
import { deployment } from '../../__fixtures__/requests';

jest.setTimeout(90_000);

const WAIT = { timeoutMs: 20_000, intervalMs: 100 };

let k: KubeRuntimeHarness;
let core: CoreV1Api;
let dir: string;

const kubectl = (...args: string[]) => k.kubectl(...args);
const ok = (...args: string[]): Promise<string> => k.ok(...args);
const pods = (namespace: string) => k.pods(namespace);

beforeAll(async () => {
  k = await KubeRuntimeHarness.start({ crds: true, env: { KUBE_CUSTOM_RESOURCES: 'true', KUBE_WORKLOAD_NAMESPACE: '*' } });
  ({ core, dir } = k);
});

afterAll(async () => {
  await k?.close();
});

it('owns the Pod and Service of an applied ModelDeployment by the object, and still deletes through the finalizer', async () => {
  const h = k.h;
  const oneGpu = await waitFor('a 1-GPU InstanceType', async () => (await ok('get', 'it', '-o', 'jsonpath={.items[*].metadata.name}')).split(' ').find((t) => t.endsWith('.1x')), WAIT);
  await ok('create', 'namespace', 'team-a');
  const file = join(dir, 'md.yaml');
  writeFileSync(file, ['apiVersion: gpufleet.io/v1', 'kind: ModelDeployment', 'metadata: { name: llama, namespace: team-a }', 'spec:', '  model: /models/llama', '  engine: { engine: vllm }', '  roles:', `    - { role: server, replicas: 1, instanceType: ${oneGpu} }`, ''].join('\n'));
  await ok('apply', '-f', file);
  const uid = await ok('get', 'md', 'llama', '-n', 'team-a', '-o', 'jsonpath={.metadata.uid}');
  const owner = { apiVersion: 'gpufleet.io/v1', kind: 'ModelDeployment', name: 'llama', uid, controller: true, blockOwnerDeletion: true };

  const [pod] = await waitFor('the Pod owned by the ModelDeployment', async () => {
    const list = await pods('team-a');
    return list.length === 1 && list[0].metadata?.ownerReferences?.[0]?.uid === uid ? list : undefined;
  }, WAIT);
  expect(pod.metadata!.ownerReferences).toEqual([owner]);
  const service = await waitFor('the Service owned by it', async () => {
    const s = await core.readNamespacedService({ namespace: 'team-a', name: 'llama' }).catch(() => undefined);
    return s?.metadata?.ownerReferences?.[0]?.uid === uid ? s : undefined;
  }, WAIT);
  expect(service.metadata!.ownerReferences).toEqual([owner]);
  // What kubectl shows of the owner.
  expect(await ok('get', 'pod', pod.metadata!.name!, '-n', 'team-a', '-o', 'jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')).toBe('ModelDeployment/llama');

  // A deployment made through gRPC has no object of its own making: its Pod has no owner.
  await callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: deployment({ name: 'plain', namespace: 'team-a', roles: [{ role: 'server', replicas: 1, size: 1, resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 } }] }) }, { metadata: h.admin() });
  const plain = await waitFor('the gRPC deployment\'s Pod', async () => (await pods('team-a')).find((p) => p.metadata?.labels?.['gpufleet.io/deployment'] === 'plain'), WAIT);
  expect(plain.metadata!.ownerReferences).toBeUndefined();
  // The owned Pod was never replaced along the way.
  expect((await pods('team-a')).find((p) => p.metadata?.labels?.['gpufleet.io/deployment'] === 'llama')?.metadata?.uid).toBe(pod.metadata!.uid);

  // kubectl delete: gpufleet's finalizer deletes the deployment, its Pod and Service go, then the object.
  await ok('delete', 'md', 'llama', '-n', 'team-a', '--wait=false');
  await waitFor('the owned Pod and Service gone', async () => {
    const left = (await pods('team-a')).filter((p) => p.metadata?.labels?.['gpufleet.io/deployment'] === 'llama');
    const svc = await core.readNamespacedService({ namespace: 'team-a', name: 'llama' }).catch(() => undefined);
    return left.length === 0 && !svc ? true : undefined;
  }, WAIT);
  await waitFor('the object gone', async () => ((await kubectl('get', 'md', 'llama', '-n', 'team-a')).stderr.includes('NotFound') ? true : undefined), WAIT);
  expect((await pods('team-a')).map((p) => p.metadata!.uid)).toEqual([plain.metadata!.uid]);
});

it('leaves the Pods to Kubernetes garbage collection once gpufleet is gone and the object is deleted', async () => {
  const oneGpu = (await ok('get', 'it', '-o', 'jsonpath={.items[*].metadata.name}')).split(' ').find((t) => t.endsWith('.1x'))!;
  const file = join(dir, 'gc.yaml');
  writeFileSync(file, ['apiVersion: gpufleet.io/v1', 'kind: ModelDeployment', 'metadata: { name: gc, namespace: team-a }', 'spec:', '  model: /models/gc', '  engine: { engine: vllm }', '  roles:', `    - { role: server, replicas: 1, instanceType: ${oneGpu} }`, ''].join('\n'));
  await ok('apply', '-f', file);
  const uid = await ok('get', 'md', 'gc', '-n', 'team-a', '-o', 'jsonpath={.metadata.uid}');
  await waitFor('the owned Pod', async () => ((await pods('team-a')).some((p) => p.metadata?.ownerReferences?.[0]?.uid === uid) ? true : undefined), WAIT);
  await waitFor('the owned Service', async () => ((await core.readNamespacedService({ namespace: 'team-a', name: 'gc' }).catch(() => undefined))?.metadata?.ownerReferences?.[0]?.uid === uid ? true : undefined), WAIT);

  // gpufleet uninstalled: nothing serves its finalizer, so the admin removes it and deletes the object.
  await k.stopScheduler();
  await ok('patch', 'md', 'gc', '-n', 'team-a', '--type=merge', '-p', '{"metadata":{"finalizers":null}}');
  await ok('delete', 'md', 'gc', '-n', 'team-a');
  await waitFor('garbage collection of the Pod and Service', async () => {
    const left = (await pods('team-a')).filter((p) => p.metadata?.ownerReferences?.[0]?.uid === uid);
    const svc = await core.readNamespacedService({ namespace: 'team-a', name: 'gc' }).catch(() => undefined);
    return left.length === 0 && !svc ? true : undefined;
  }, WAIT);
  // The Pod of the gRPC deployment, which no object owns, is left alone.
  expect((await pods('team-a')).map((p) => p.metadata!.labels!['gpufleet.io/deployment'])).toEqual(['plain']);
});

// The kubernetes runtime end to end: a real nats-server and scheduler (RUNTIME=kubernetes) against
// the Kubernetes API simulator, with kubectl as a user would run it. The test acts as the kubelet
// (api.put of a Pod's status): nothing runs behind the simulator.
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { Buckets, DeploymentPhase, NodeLedger, PodRuntimeStatus } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { waitFor, type KubeApiServer } from '@gpufleet/testing';
import { KubeRuntimeHarness, MANAGED_SELECTOR, running } from '../../__fixtures__/kube-runtime-harness';
import type { SchedulerHarness } from '../../__fixtures__/scheduler-harness';
import { deployment } from '../../__fixtures__/requests';

jest.setTimeout(60_000);

const NS = 'gpufleet';
const SELECTOR = MANAGED_SELECTOR;
const WAIT = { timeoutMs: 15_000, intervalMs: 50 };

let k: KubeRuntimeHarness;
let api: KubeApiServer;
let h: SchedulerHarness;
let core: CoreV1Api;

const kubectl = (...args: string[]) => k.kubectl(...args);
const pods = (): Promise<V1Pod[]> => k.pods(NS);

async function podsWhen(what: string, ok: (pods: V1Pod[]) => boolean): Promise<V1Pod[]> {
  return waitFor(
    what,
    async () => {
      const list = await pods();
      return ok(list) ? list : undefined;
    },
    WAIT,
  );
}

async function getDeployment(name = 'd') {
  return (await callUnary(h.clients.deployments, h.clients.deployments.getDeployment, { namespace: 'default', name }, { metadata: h.admin() })).deployment!;
}

beforeAll(async () => {
  k = await KubeRuntimeHarness.start({ env: { KUBE_WORKLOAD_NAMESPACE: NS } });
  ({ api, core, h } = k);
});

afterAll(async () => {
  await k?.close();
});

it('runs a deployment as Pods, turns the kubelet’s status into Ready, scales, re-adopts after a restart and cleans up', async () => {
  await callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: deployment({ roles: [{ role: 'server', replicas: 2, size: 1, resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 } }] }) }, { metadata: h.admin() });

  // Pods pinned to the placed nodes, requesting the device plugin's resource, labelled.
  const created = await podsWhen('two Pods', (list) => list.length === 2);
  expect((await core.readNamespace({ name: NS })).metadata?.name).toBe(NS);
  const ledgers = await KvStore.open(h.nc.jetstream(), Buckets.ledger(h.cluster), NodeLedger);
  const placedNodes = new Set<string>();
  for (const v of await ledgers.list()) if (v.value.entries.length > 0) placedNodes.add(v.key);
  for (const pod of created) {
    expect(placedNodes.has(pod.spec!.nodeName!)).toBe(true);
    expect(pod.spec!.containers[0].resources!.limits!['gpufleet.io/nvidia-gpu']).toBe('1');
    expect(pod.metadata!.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'gpufleet', 'gpufleet.io/namespace': 'default', 'gpufleet.io/deployment': 'd', 'app.kubernetes.io/component': 'engine' });
    expect(pod.metadata!.labels!['gpufleet.io/owner-uid']).toBe((await getDeployment()).uid);
    expect(pod.metadata!.name!.startsWith('default-d-')).toBe(true);
    expect(pod.metadata!.managedFields?.some((f) => f.manager === 'gpufleet' && f.operation === 'Apply')).toBe(true);
  }
  const service = await waitFor('the deployment Service', () => core.readNamespacedService({ namespace: NS, name: 'default-d' }).catch(() => undefined), WAIT);
  expect(service.spec!.selector).toMatchObject({ 'gpufleet.io/deployment': 'd', 'gpufleet.io/namespace': 'default', 'gpufleet.io/endpoint': 'true' });

  const listed = await kubectl('get', 'pods', '-n', NS, '-o', 'wide');
  expect(listed.stderr).toBe('');
  expect(listed.code).toBe(0);
  for (const pod of created) expect(listed.stdout).toMatch(new RegExp(`${pod.metadata!.name}\\s+0/1\\s+Pending.*${pod.spec!.nodeName}`));

  // The kubelet reports them Ready: the pods bucket and the deployment follow.
  const records = await KvStore.open(h.nc.jetstream(), Buckets.pods(h.cluster), PodRuntimeStatus);
  created.forEach((pod, i) => api.put(running(pod, `10.0.0.${i + 1}`) as Parameters<KubeApiServer['put']>[0]));
  await waitFor(
    'both pod records Ready',
    async () => {
      const all = (await records.list()).map((v) => v.value);
      return all.length === 2 && all.every((r) => r.state === 'Ready' && r.host.startsWith('10.0.0.') && r.port === 8000) ? all : undefined;
    },
    WAIT,
  );
  await waitFor('the deployment Ready', async () => ((await getDeployment()).status?.phase === DeploymentPhase.DEPLOYMENT_PHASE_READY ? true : undefined), WAIT);
  expect((await kubectl('get', 'pods', '-n', NS)).stdout).toMatch(/1\/1\s+Running/);

  // Scale down: the surplus Pod goes, the other stays as it was.
  const spec = (await getDeployment()).spec!;
  await callUnary(h.clients.deployments, h.clients.deployments.updateDeployment, { spec: { ...spec, roles: [{ ...spec.roles[0], replicas: 1 }] } }, { metadata: h.admin() });
  const [kept] = await podsWhen('one Pod left', (list) => list.length === 1);
  expect(created.map((p) => p.metadata!.uid)).toContain(kept.metadata!.uid);
  await waitFor('one pod record', async () => ((await records.list()).length === 1 ? true : undefined), WAIT);

  // A restarted scheduler re-adopts the Pod: same uid, same resourceVersion, no new write.
  await h.restart();
  await new Promise((r) => setTimeout(r, 2_000));
  const after = await pods();
  expect(after.map((p) => [p.metadata!.uid, p.metadata!.resourceVersion])).toEqual([[kept.metadata!.uid, kept.metadata!.resourceVersion]]);
  expect((await records.list()).map((v) => v.value.state)).toEqual(['Ready']);

  // Deleting the deployment deletes its Pods and its Service.
  await callUnary(h.clients.deployments, h.clients.deployments.deleteDeployment, { namespace: 'default', name: 'd' }, { metadata: h.admin() });
  await podsWhen('no Pods', (list) => list.length === 0);
  await waitFor('the Service gone', async () => ((await core.listNamespacedService({ namespace: NS, labelSelector: SELECTOR })).items.length === 0 ? true : undefined), WAIT);
  await waitFor('no pod records', async () => ((await records.list()).length === 0 ? true : undefined), WAIT);
});

it('runs a multi-node replica as one group: a headless Service, per-rank commands, and a restart of the group when a worker exits', async () => {
  await callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: deployment({ name: 'g', roles: [{ role: 'server', replicas: 1, size: 2, resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 } }] }) }, { metadata: h.admin() });
  const created = await podsWhen('the two Pods of the group', (list) => list.length === 2);
  const byRole = (list: V1Pod[], role: string): V1Pod => list.find((p) => p.metadata!.labels!['gpufleet.io/group-role'] === role)!;
  const [leader, worker] = [byRole(created, 'leader'), byRole(created, 'worker')];
  const services = await waitFor(
    'the group Service',
    async () => {
      const list = (await core.listNamespacedService({ namespace: NS, labelSelector: `${SELECTOR},app.kubernetes.io/component=group` })).items;
      return list.length === 1 ? list : undefined;
    },
    WAIT,
  );
  const service = services[0];
  expect(service.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true, selector: { 'gpufleet.io/namespace': 'default', 'gpufleet.io/replica': '0' } });
  for (const pod of created) expect(pod.spec!.subdomain).toBe(service.metadata!.name);
  expect(worker.spec!.containers[0].args).toContain(`--address=${leader.spec!.hostname}.${service.metadata!.name}.${NS}.svc:29500`);
  expect(worker.spec!.containers[0].readinessProbe).toBeUndefined();

  // The kubelet runs both: the leader's record is the group's leader with its rendezvous port, and the deployment is Ready.
  const records = await KvStore.open(h.nc.jetstream(), Buckets.pods(h.cluster), PodRuntimeStatus);
  api.put(running(leader, '10.0.1.1') as Parameters<KubeApiServer['put']>[0]);
  api.put(running(worker, '10.0.1.2') as Parameters<KubeApiServer['put']>[0]);
  const ready = await waitFor(
    'both group records Ready',
    async () => {
      const all = (await records.list()).map((v) => v.value);
      return all.length === 2 && all.every((r) => r.state === 'Ready') ? all : undefined;
    },
    WAIT,
  );
  expect(ready.map((r) => [r.groupRole, r.groupPort]).sort()).toEqual([
    ['leader', 29500],
    ['worker', 0],
  ]);
  await waitFor('the deployment Ready', async () => ((await getDeployment('g')).status?.phase === DeploymentPhase.DEPLOYMENT_PHASE_READY ? true : undefined), WAIT);

  // The worker's engine exits and the kubelet restarts it in place: the leader's Pod is made anew, the worker's is kept.
  const later = new Date(Date.now() + 1_000);
  const restarted = running(worker, '10.0.1.2');
  const status = restarted.status!.containerStatuses![0];
  restarted.status!.containerStatuses = [{ ...status, restartCount: 1, state: { running: { startedAt: new Date(later.getTime() + 500) } }, lastState: { terminated: { exitCode: 1, finishedAt: later } } }];
  api.put(restarted as Parameters<KubeApiServer['put']>[0]);
  const after = await podsWhen('a new leader Pod', (list) => list.length === 2 && !list.some((p) => p.metadata!.uid === leader.metadata!.uid));
  expect(byRole(after, 'worker').metadata!.uid).toBe(worker.metadata!.uid);

  await callUnary(h.clients.deployments, h.clients.deployments.deleteDeployment, { namespace: 'default', name: 'g' }, { metadata: h.admin() });
  await podsWhen('no Pods', (list) => list.length === 0);
  await waitFor('the Services gone', async () => ((await core.listNamespacedService({ namespace: NS, labelSelector: SELECTOR })).items.length === 0 ? true : undefined), WAIT);
});

it('places nothing on a cordoned Kubernetes Node, says why in the node status, and uses it again once uncordoned', async () => {
  const node = (name: string, unschedulable: boolean) =>
    api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: { unschedulable }, status: { conditions: [{ type: 'Ready', status: 'True' }], allocatable: { 'gpufleet.io/nvidia-gpu': '8' } } });
  node('gpu-0', true);
  const message = async (): Promise<string> => {
    const { nodes } = await callUnary(h.clients.capacity, h.clients.capacity.listNodes, { pageSize: 0, pageToken: '', pool: '', labelSelector: {} }, { metadata: h.admin() });
    return nodes.find((n) => n.name === 'gpu-0')?.status?.message ?? '';
  };
  await waitFor('gpu-0 held back', async () => ((await message()).includes('cordoned') ? true : undefined), WAIT);
  expect((await kubectl('get', 'nodes')).stdout).toMatch(/gpu-0\s+Ready,SchedulingDisabled/);

  // Two replicas of a whole node each: one fits on gpu-1, the other waits rather than take gpu-0.
  const whole = { accelerator: { whole: 8 }, vcpu: 2, memoryMib: 4096 };
  await callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: deployment({ name: 'big', roles: [{ role: 'server', replicas: 2, size: 1, resources: whole }] }) }, { metadata: h.admin() });
  await podsWhen('one Pod on gpu-1', (list) => list.length === 1 && list[0].spec!.nodeName === 'gpu-1');
  await new Promise((r) => setTimeout(r, 1_000));
  expect((await pods()).map((p) => p.spec!.nodeName)).toEqual(['gpu-1']);

  node('gpu-0', false);
  const both = await podsWhen('the second replica on gpu-0', (list) => list.length === 2);
  expect(both.map((p) => p.spec!.nodeName).sort()).toEqual(['gpu-0', 'gpu-1']);
  await waitFor('gpu-0 no longer held back', async () => (!(await message()).includes('not placed on') ? true : undefined), WAIT);
});

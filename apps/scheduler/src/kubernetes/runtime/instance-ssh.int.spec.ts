// Where to ssh to a GPUInstance on Kubernetes: its SSH Service (here a LoadBalancer, whose node
// port the API simulator allocates as kube-apiserver does) in the instance's gRPC status and its
// GPUInstance object's status. A real nats-server and scheduler (RUNTIME=kubernetes,
// KUBE_CUSTOM_RESOURCES=true) against the API simulator; the test acts as the kubelet (the Pod's
// status) and as the cloud's load-balancer controller (the Service's ingress).
import type { CoreV1Api, V1Pod, V1Service } from '@kubernetes/client-node';
import { InstancePhase } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { waitFor, type KubeApiServer } from '@gpufleet/testing';
import { KubeRuntimeHarness } from '../../__fixtures__/kube-runtime-harness';
import type { SchedulerHarness } from '../../__fixtures__/scheduler-harness';
import { instance } from '../../__fixtures__/requests';

jest.setTimeout(60_000);

const NS = 'gpufleet';
const WAIT = { timeoutMs: 15_000, intervalMs: 100 };

let k: KubeRuntimeHarness;
let api: KubeApiServer;
let h: SchedulerHarness;
let core: CoreV1Api;

const ok = (...args: string[]): Promise<string> => k.ok(...args);

type Put = Parameters<KubeApiServer['put']>[0];

/** What the kubelet writes once both containers run and are ready. */
function running(pod: V1Pod): V1Pod {
  const now = new Date().toISOString() as unknown as Date;
  const ready = (name: string) => ({ name, image: 'x', imageID: '', ready: true, started: true, restartCount: 0, containerID: 'containerd://abc', state: { running: { startedAt: now } } });
  return { ...pod, status: { phase: 'Running', podIP: '10.0.0.7', hostIP: '192.168.0.21', startTime: now, conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [ready('workload'), ready('sshd')] } };
}

async function sshOf(): Promise<string> {
  const { instance: i } = await callUnary(h.clients.instances, h.clients.instances.getInstance, { namespace: 'default', name: 'i' }, { metadata: h.admin() });
  return i?.status?.phase === InstancePhase.INSTANCE_PHASE_RUNNING ? `${i.status.sshHost}:${i.status.sshPort}` : '';
}

beforeAll(async () => {
  k = await KubeRuntimeHarness.start({ crds: true, env: { KUBE_WORKLOAD_NAMESPACE: NS, KUBE_SSH_SERVICE_TYPE: 'LoadBalancer', KUBE_CUSTOM_RESOURCES: 'true' } });
  ({ api, core, h } = k);
});

afterAll(async () => {
  await k?.close();
});

it("reports a LoadBalancer SSH Service's node port on the Pod's node, then its ingress, in the gRPC and the GPUInstance status", async () => {
  await callUnary(h.clients.instances, h.clients.instances.createInstance, { spec: instance() }, { metadata: h.admin() });
  const service = await waitFor('the SSH Service with its node port', async () => {
    const s = await core.readNamespacedService({ namespace: NS, name: 'default-i-ssh' }).catch(() => undefined);
    return s?.spec?.ports?.[0]?.nodePort ? s : undefined;
  }, WAIT);
  expect(service.spec).toMatchObject({ type: 'LoadBalancer', ports: [expect.objectContaining({ name: 'ssh', port: 22, targetPort: 'ssh' })] });
  const nodePort = service.spec!.ports![0].nodePort!;
  expect(nodePort).toBeGreaterThanOrEqual(30000);
  expect(await ok('get', 'svc', 'default-i-ssh', '-n', NS)).toMatch(new RegExp(`LoadBalancer\\s+\\S+\\s+<pending>\\s+22:${nodePort}/TCP`));

  const [pod] = await waitFor('the instance Pod', async () => {
    const list = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'app.kubernetes.io/managed-by=gpufleet' })).items;
    return list.length === 1 ? list : undefined;
  }, WAIT);
  api.put(running(pod) as Put);

  // No load balancer yet: the node's address and the node port.
  await waitFor('ssh to the node port', async () => ((await sshOf()) === `192.168.0.21:${nodePort}` ? true : undefined), WAIT);
  const columns = () => ok('get', 'gi', 'i', '-n', 'default', '-o', 'jsonpath={.status.phase} {.status.sshHost} {.status.sshPort}');
  await waitFor('the GPUInstance status', async () => ((await columns()) === `Running 192.168.0.21 ${nodePort}` ? true : undefined), WAIT);

  // The cloud provisions the load balancer: its address and the Service port.
  const current = await core.readNamespacedService({ namespace: NS, name: 'default-i-ssh' });
  api.put({ ...current, status: { loadBalancer: { ingress: [{ ip: '203.0.113.9' }] } } } as V1Service as Put);
  await waitFor('ssh to the load balancer', async () => ((await sshOf()) === '203.0.113.9:22' ? true : undefined), WAIT);
  await waitFor('the GPUInstance status follows', async () => ((await columns()) === 'Running 203.0.113.9 22' ? true : undefined), WAIT);
  expect(await ok('get', 'gi', 'i', '-n', 'default')).toMatch(/Running.*203\.0\.113\.9\s+22/);
  // The Service keeps its node port through gpufleet's later applies.
  expect((await core.readNamespacedService({ namespace: NS, name: 'default-i-ssh' })).spec!.ports![0].nodePort).toBe(nodePort);
});

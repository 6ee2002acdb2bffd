// The kubelet's word on devices against the scheduler's ledger: a real nats-server and scheduler
// (RUNTIME=kubernetes) against the Kubernetes API simulator. The test writes the node's
// kubelet-devices record as its agent does (the agent's side: apps/device-discovery
// pod-resources-reporter.int.spec.ts).
import type { V1Pod } from '@kubernetes/client-node';
import { Buckets, KubeletDevices, NodeLedger, Workload, storeKey } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { waitFor } from '@gpufleet/testing';
import { KubeRuntimeHarness } from '../../__fixtures__/kube-runtime-harness';
import type { SchedulerHarness } from '../../__fixtures__/scheduler-harness';
import { deployment } from '../../__fixtures__/requests';

jest.setTimeout(60_000);

const NS = 'gpufleet';
const WAIT = { timeoutMs: 15_000, intervalMs: 50 };

let k: KubeRuntimeHarness;
let h: SchedulerHarness;

const pods = (): Promise<V1Pod[]> => k.pods(NS);

async function metric(name: string): Promise<string> {
  const text = await (await fetch(`http://127.0.0.1:${h.service.opsPort}/metrics`)).text();
  return text.split('\n').filter((l) => l.startsWith(name)).join('\n');
}

async function wholeFree(): Promise<number> {
  const { instanceTypes } = await callUnary(h.clients.capacity, h.clients.capacity.listInstanceTypes, { pageSize: 0, pageToken: '', pool: '' }, { metadata: h.admin() });
  const one = instanceTypes.find((t) => t.name.endsWith('.1x'));
  return one?.capacity?.whole?.remaining ?? -1;
}

beforeAll(async () => {
  k = await KubeRuntimeHarness.start({ env: { KUBE_WORKLOAD_NAMESPACE: NS } });
  h = k.h;
});

afterAll(async () => {
  await k?.close();
});

it('takes the devices the kubelet gave a Pod into the ledger (no Pod replaced, counted, placement follows) and places nothing on a card the kubelet cannot allocate', async () => {
  const js = h.nc.jetstream();
  const ledgers = await KvStore.open(js, Buckets.ledger(h.cluster), NodeLedger);
  const workloads = await KvStore.open(js, Buckets.workloads(h.cluster), Workload);
  const reports = await KvStore.open(js, Buckets.kubeletDevices(h.cluster), KubeletDevices);
  const before = await wholeFree();
  await callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: deployment({ roles: [{ role: 'server', replicas: 1, size: 1, resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 } }] }) }, { metadata: h.admin() });
  const [pod] = await waitFor('the Pod', async () => ((await pods()).length === 1 ? pods() : undefined), WAIT);
  const node = pod.spec!.nodeName!;
  const [entry] = (await ledgers.get(node))!.value.entries;
  expect(entry.pod!.acceleratorIds).toEqual(['nvidia-0']);
  await waitFor('the capacity views count the card', async () => ((await wholeFree()) === before - 1 ? true : undefined), WAIT);

  // The kubelet gave the Pod GPU-5 instead, and lists GPU-7 as not allocatable (unhealthy).
  const allUuids = Array.from({ length: 8 }, (_, i) => `GPU-${i}`);
  await reports.put(node, KubeletDevices.fromPartial({
    node,
    allocatable: [{ resource: 'gpufleet.io/nvidia-gpu', deviceIds: allUuids.filter((u) => u !== 'GPU-7') }],
    assigned: [{ namespace: NS, pod: pod.metadata!.name!, container: 'engine', resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-5'] }],
    observedAt: new Date(),
  }));

  const corrected = await waitFor('the ledger corrected', async () => {
    const e = (await ledgers.get(node))?.value.entries[0];
    return e?.pod?.acceleratorIds[0] === 'nvidia-5' ? e : undefined;
  }, WAIT);
  expect(corrected.workload).toBe(entry.workload);
  await waitFor('the workload record corrected', async () => ((await workloads.get(storeKey(entry.workload)))?.value.status?.placements[0]?.acceleratorIds[0] === 'nvidia-5' ? true : undefined), WAIT);
  expect(await metric('gpufleet_kubelet_ledger_corrections_total')).toContain(`gpufleet_kubelet_ledger_corrections_total{node="${node}",resource="gpufleet.io/nvidia-gpu",service="scheduler"} 1`);
  // GPU-7 withheld on top of the Pod's card.
  await waitFor('the withheld card out of the capacity views', async () => ((await wholeFree()) === before - 2 ? true : undefined), WAIT);

  // The Pod is the right one: not replaced, and corrected once.
  await new Promise((r) => setTimeout(r, 500));
  expect((await pods()).map((p) => p.metadata!.uid)).toEqual([pod.metadata!.uid]);
  expect(await metric('gpufleet_kubelet_ledger_corrections_total')).toContain('} 1');

  // A whole-node replica fits only on the other node now: 6 cards are free on this one.
  await callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: deployment({ name: 'seven', roles: [{ role: 'server', replicas: 2, size: 1, resources: { accelerator: { whole: 7 }, vcpu: 2, memoryMib: 4096 } }] }) }, { metadata: h.admin() });
  const placed = await waitFor('one replica of seven', async () => {
    const list = (await pods()).filter((p) => p.metadata!.labels?.['gpufleet.io/deployment'] === 'seven');
    return list.length >= 1 ? list : undefined;
  }, WAIT);
  await new Promise((r) => setTimeout(r, 1_000));
  expect((await pods()).filter((p) => p.metadata!.labels?.['gpufleet.io/deployment'] === 'seven').map((p) => p.spec!.nodeName)).toEqual([placed[0].spec!.nodeName]);
  expect(placed[0].spec!.nodeName).not.toBe(node);

  // The card allocatable again: the second replica takes this node's seven free cards.
  await reports.put(node, KubeletDevices.fromPartial({
    node,
    allocatable: [{ resource: 'gpufleet.io/nvidia-gpu', deviceIds: allUuids }],
    assigned: [{ namespace: NS, pod: pod.metadata!.name!, container: 'engine', resource: 'gpufleet.io/nvidia-gpu', deviceIds: ['GPU-5'] }],
    observedAt: new Date(),
  }));
  const both = await waitFor('the second replica of seven', async () => {
    const list = (await pods()).filter((p) => p.metadata!.labels?.['gpufleet.io/deployment'] === 'seven');
    return list.length === 2 ? list : undefined;
  }, WAIT);
  expect(both.map((p) => p.spec!.nodeName)).toContain(node);
  const seven = (await ledgers.get(node))!.value.entries.find((e) => e.workload !== entry.workload)!;
  expect(seven.pod!.acceleratorIds).not.toContain('nvidia-5');
});

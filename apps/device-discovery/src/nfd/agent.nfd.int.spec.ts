// The whole agent with NFD=true against a real nats-server and the Kubernetes API simulator:
// the node's labels appear as NodeFeature gpufleet-<node>, kubectl shows it, and an inventory
// change (the agent restarted on a changed fleet file) updates it, removed labels included; a
// failing API is retried without holding up detection.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startKubeApiServer, startNats, waitFor, type KubeApiServer, type KubeObject, type RunningServer } from '@gpufleet/testing';
import { startAgent, type AgentUnderTest } from '../__fixtures__/agent-harness';

const run = promisify(execFile);
type Stored = KubeObject & { spec: { labels: Record<string, string> } };
const NODE = 'h100-0';
const fleet = (product: string, count: number) => `cluster: nfd
nodes:
  - namePrefix: h100-
    count: 1
    accelerators: { product: ${product}, count: ${count} }
`;

describe('agent with NFD=true', () => {
  let nats: RunningServer;
  let api: KubeApiServer;
  let dir: string;
  let agent: AgentUnderTest | undefined;

  const env = (extra: Record<string, string> = {}) => ({
    GPUFLEET_CLUSTER: 'nfd',
    NATS_URL: nats.url,
    GPUFLEET_PROVIDERS: 'simulated',
    GPUFLEET_FLEET_FILE: join(dir, 'fleet.yaml'),
    NODE_NAME: NODE,
    KUBECONFIG: api.kubeconfigPath,
    ...extra,
  });
  const nodeFeature = (): Stored | undefined => <Stored | undefined>api.store.get('nfd.k8s-sigs.io/nodefeatures', 'gpufleet', `gpufleet-${NODE}`);

  beforeAll(async () => {
    [nats, api] = await Promise.all([startNats(), startKubeApiServer()]);
    api.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'gpufleet' } });
    api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } });
    dir = mkdtempSync(join(tmpdir(), 'gpufleet-agent-nfd-it-'));
  });
  afterEach(async () => {
    await agent?.close();
    agent = undefined;
  });
  afterAll(async () => {
    await api?.close();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('applies NodeFeature gpufleet-<node> with the node’s labels, shown by kubectl, and follows an inventory change', async () => {
    writeFileSync(join(dir, 'fleet.yaml'), fleet('NVIDIA H100 80GB HBM3', 8));
    agent = await startAgent(env({ NFD: 'true', NODE_LABELS: 'team=infra,gpufleet.io/pool=a' }));
    const first = await waitFor('NodeFeature', () => nodeFeature(), { timeoutMs: 10_000 });
    expect(first.metadata?.labels).toEqual({ 'nfd.node.kubernetes.io/node-name': NODE });
    const labels = first.spec.labels;
    expect(labels).toMatchObject({
      'nvidia.com/gpu.present': 'true',
      'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      'nvidia.com/gpu.count': '8',
      'gpufleet.io/pool': 'a',
      'feature.node.kubernetes.io/team': 'infra',
    });
    expect(labels['kubernetes.io/arch']).toBeUndefined();
    expect(first.metadata?.managedFields?.map((m) => `${m.manager}/${m.operation}`)).toEqual(['gpufleet/Apply']);
    // The Node was read once (it exists: nothing to warn about).
    expect(api.requests.some((r) => r.method === 'GET' && r.path === `/api/v1/nodes/${NODE}`)).toBe(true);

    const cacheDir = mkdtempSync(join(dir, 'kubectl-cache-'));
    const { stdout } = await run('/usr/bin/kubectl', ['--kubeconfig', api.kubeconfigPath, '--cache-dir', cacheDir, 'get', 'nodefeatures', '-n', 'gpufleet', '-o', 'yaml']);
    expect(stdout).toContain(`name: gpufleet-${NODE}`);
    expect(stdout).toContain('nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3');
    expect(stdout).toContain(`nfd.node.kubernetes.io/node-name: ${NODE}`);
    await agent.close();
    agent = undefined;

    // The node's cards changed and a configured label went away: the object follows, the removed label leaves it.
    writeFileSync(join(dir, 'fleet.yaml'), fleet('NVIDIA L40S', 4));
    agent = await startAgent(env({ NFD: 'true', NODE_LABELS: 'team=infra' }));
    const second = await waitFor('NodeFeature updated', () => {
      const o = nodeFeature();
      return o?.spec.labels['nvidia.com/gpu.count'] === '4' ? o : undefined;
    }, { timeoutMs: 10_000 });
    expect(second.spec.labels['nvidia.com/gpu.product']).toBe('NVIDIA-L40S');
    expect(second.spec.labels['gpufleet.io/pool']).toBeUndefined();
    expect(second.spec.labels['feature.node.kubernetes.io/team']).toBe('infra');
  });

  it('keeps detecting while applies fail, and retries until the namespace exists', async () => {
    writeFileSync(join(dir, 'fleet.yaml'), fleet('NVIDIA H100 80GB HBM3', 8));
    // POD_NAMESPACE does not exist yet: every apply is a 404 NotFound.
    agent = await startAgent(env({ NFD: 'true', POD_NAMESPACE: 'later' }));
    expect((await agent.readiness()).status).toBe(200);
    await waitFor('a failed apply', () => api.requests.some((r) => r.path.includes('/namespaces/later/nodefeatures') && r.status === 404) || undefined, { timeoutMs: 5_000 });
    api.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'later' } });
    const applied = await waitFor('NodeFeature after the retry', () => <Stored | undefined>api.store.get('nfd.k8s-sigs.io/nodefeatures', 'later', `gpufleet-${NODE}`), { timeoutMs: 8_000 });
    expect(applied.spec.labels['nvidia.com/gpu.count']).toBe('8');
  });

  it('talks to no Kubernetes API with NFD off (the default)', async () => {
    writeFileSync(join(dir, 'fleet.yaml'), fleet('NVIDIA H100 80GB HBM3', 8));
    const before = api.requests.length;
    agent = await startAgent(env());
    expect(agent.config.NFD).toBe(false);
    expect(agent.config.POD_NAMESPACE).toBe('gpufleet');
    expect(api.requests.length).toBe(before);
  });
});

// The simulator checked with a client nobody here wrote: the machine's kubectl.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeApiServer, startKubeApiServer } from './server';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';

describe('kube-apiserver simulator, driven by kubectl', () => {
  let api: KubeApiServer;
  let dir: string;

  // A cache directory per run: kubectl keeps discovery and OpenAPI documents by host:port.
  const args = (...rest: string[]): string[] => ['--kubeconfig', api.kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...rest];

  function kubectl(...rest: string[]): Promise<Run> {
    return new Promise((resolve, reject) => {
      const child = spawn(KUBECTL, args(...rest), { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  async function ok(...rest: string[]): Promise<string> {
    const run = await kubectl(...rest);
    if (run.code !== 0) throw new Error(`kubectl ${rest.join(' ')} exited ${run.code}: ${run.stderr}`);
    return run.stdout;
  }

  const manifest = (name: string, text: string): string => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kubesim-kubectl-'));
    api = await startKubeApiServer();
    api.put({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'gpu-node-1', labels: { 'node-role.kubernetes.io/worker': '' } },
      status: { conditions: [{ type: 'Ready', status: 'True' }], nodeInfo: { kubeletVersion: 'v1.32.0' }, addresses: [{ type: 'InternalIP', address: '10.0.0.11' }] },
    });
    api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'gpu-node-2' }, spec: { unschedulable: true }, status: { conditions: [{ type: 'Ready', status: 'False' }] } });
    api.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'engine-0', namespace: 'default', labels: { app: 'engine' } },
      spec: { nodeName: 'gpu-node-1', containers: [{ name: 'vllm', image: 'vllm/vllm-openai:v0.11.0', ports: [{ containerPort: 8000 }] }] },
      status: { phase: 'Running', podIP: '10.244.0.7', containerStatuses: [{ name: 'vllm', ready: true, restartCount: 3, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } }] },
    });
  });

  afterAll(async () => {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists nodes with their status and roles', async () => {
    const out = await ok('get', 'nodes');
    expect(out).toMatch(/^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION/);
    expect(out).toMatch(/gpu-node-1\s+Ready\s+worker\s+\S+\s+v1\.32\.0/);
    expect(out).toMatch(/gpu-node-2\s+NotReady,SchedulingDisabled\s+<none>/);
  });

  it('lists pods wide, with IP and node', async () => {
    const out = await ok('get', 'pods', '-o', 'wide');
    expect(out).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE/);
    expect(out).toMatch(/engine-0\s+1\/1\s+Running\s+3\s+\S+\s+10\.244\.0\.7\s+gpu-node-1/);
  });

  it('serves raw JSON lists', async () => {
    const list = JSON.parse(await ok('get', '--raw', '/api/v1/namespaces/default/pods')) as { kind: string; items: { metadata: { name: string } }[] };
    expect(list.kind).toBe('PodList');
    expect(list.items.map((p) => p.metadata.name)).toEqual(['engine-0']);
  });

  it('refuses a wrong bearer token with 401', async () => {
    const run = await kubectl('--token', 'not-the-token', 'get', 'pods');
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/Unauthorized|provide credentials/);
  });

  it('server-side applies idempotently; a second manager conflicts until it forces', async () => {
    const doc = (value: string): string => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: engine-config\n  labels: {app: engine}\ndata:\n  model: ${value}\n`;
    const first = manifest('cm.yaml', doc('llama'));
    expect(await ok('apply', '--server-side', '-f', first)).toContain('configmap/engine-config serverside-applied');
    const rv = await ok('get', 'configmap', 'engine-config', '-o', 'jsonpath={.metadata.resourceVersion}');
    await ok('apply', '--server-side', '-f', first);
    expect(await ok('get', 'configmap', 'engine-config', '-o', 'jsonpath={.metadata.resourceVersion}')).toBe(rv);

    const second = manifest('cm2.yaml', doc('qwen'));
    const refused = await kubectl('apply', '--server-side', '--field-manager', 'rollout', '-f', second);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Apply failed with 1 conflict: conflict with "kubectl" using v1: .data.model');

    await ok('apply', '--server-side', '--field-manager', 'rollout', '--force-conflicts', '-f', second);
    const cm = JSON.parse(await ok('get', 'configmap', 'engine-config', '-o', 'json', '--show-managed-fields')) as {
      data: Record<string, string>;
      metadata: { managedFields: { manager: string; fieldsV1: Record<string, unknown> }[] };
    };
    expect(cm.data['model']).toBe('qwen');
    const rollout = cm.metadata.managedFields.find((m) => m.manager === 'rollout');
    expect(rollout?.fieldsV1).toEqual({ 'f:data': { 'f:model': {} }, 'f:metadata': { 'f:labels': { 'f:app': {} } } });
    expect(cm.metadata.managedFields.find((m) => m.manager === 'kubectl')?.fieldsV1).toEqual({ 'f:metadata': { 'f:labels': { 'f:app': {} } } });
  });

  it('scales a deployment through its scale subresource', async () => {
    const deployment = manifest(
      'deploy.yaml',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: router}\nspec:\n  selector: {matchLabels: {app: router}}\n  template:\n    metadata: {labels: {app: router}}\n    spec: {containers: [{name: router, image: gpufleet/router:1, ports: [{containerPort: 8080}]}]}\n',
    );
    await ok('apply', '-f', deployment);
    expect(await ok('scale', 'deployment', 'router', '--replicas=4')).toContain('deployment.apps/router scaled');
    expect(await ok('get', 'deployment', 'router', '-o', 'jsonpath={.spec.replicas} {.metadata.generation} {.spec.template.spec.containers[0].ports[0].protocol}')).toBe('4 2 TCP');
    const scale = JSON.parse(await ok('get', '--raw', '/apis/apps/v1/namespaces/default/deployments/router/scale')) as { kind: string; status: { selector: string } };
    expect(scale).toMatchObject({ kind: 'Scale', status: { selector: 'app=router' } });
  });

  it('applies a CRD, waits for it to be Established and prints its columns', async () => {
    const crd = manifest(
      'crd.yaml',
      `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gpupools.gpufleet.io}
spec:
  group: gpufleet.io
  scope: Namespaced
  names: {plural: gpupools, singular: gpupool, kind: GpuPool, shortNames: [gp]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Vendor, type: string, jsonPath: .spec.vendor}
    - {name: First Node, type: string, jsonPath: '.spec.nodes[0].name'}
    - {name: Free, type: integer, jsonPath: .status.free}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {vendor: {type: string}, nodes: {type: array, items: {type: object, properties: {name: {type: string}}}}}}
          status: {type: object, properties: {free: {type: integer}}}
`,
    );
    expect(await ok('apply', '-f', crd)).toContain('customresourcedefinition.apiextensions.k8s.io/gpupools.gpufleet.io created');
    expect(await ok('wait', '--for=condition=Established', '--timeout=5s', 'crd/gpupools.gpufleet.io')).toContain('condition met');
    const pool = manifest('pool.yaml', 'apiVersion: gpufleet.io/v1\nkind: GpuPool\nmetadata: {name: h100}\nspec: {vendor: nvidia, nodes: [{name: gpu-node-1}]}\n');
    expect(await ok('apply', '-f', pool)).toContain('gpupool.gpufleet.io/h100 created');
    api.resources.patch(api.kinds.find('gpufleet.io', 'v1', 'gpupools')!, 'default', 'h100', 'application/merge-patch+json', '{"status":{"free":6}}', { subresource: 'status' });
    const out = await ok('get', 'gpupools');
    expect(out).toMatch(/^NAME\s+VENDOR\s+FIRST NODE\s+FREE\s+AGE/);
    expect(out).toMatch(/h100\s+nvidia\s+gpu-node-1\s+6\s+\d+s/);
    expect(await ok('get', 'gp', 'h100', '-o', 'jsonpath={.spec.vendor}')).toBe('nvidia');

    const wrongType = manifest('bad.yaml', 'apiVersion: gpufleet.io/v1\nkind: GpuPool\nmetadata: {name: bad}\nspec: {vendor: 7}\n');
    const refused = await kubectl('apply', '-f', wrongType);
    expect(refused.stderr).toContain('spec.vendor');

    // kubectl asks for strict field validation; without it undeclared fields are pruned.
    const unknown = manifest('unknown.yaml', 'apiVersion: gpufleet.io/v1\nkind: GpuPool\nmetadata: {name: extra}\nspec: {vendor: amd, color: red}\n');
    expect((await kubectl('apply', '-f', unknown)).stderr).toContain('unknown field "spec.color"');
    await ok('apply', '--validate=false', '-f', unknown);
    expect(await ok('get', 'gp', 'extra', '-o', 'jsonpath={.spec}')).toBe('{"vendor":"amd"}');
  });

  it('streams rows to `get -w` as objects change', async () => {
    const child = spawn(KUBECTL, args('get', 'pods', '-w'), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const seen = async (pattern: RegExp): Promise<void> => {
      const deadline = Date.now() + 10_000;
      while (!pattern.test(out)) {
        if (Date.now() > deadline) throw new Error(`kubectl get -w never printed ${pattern}: ${out}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    };
    try {
      await seen(/engine-0\s+1\/1\s+Running/);
      const pods = api.kinds.find('', 'v1', 'pods')!;
      api.resources.patch(pods, 'default', 'engine-0', 'application/merge-patch+json', '{"status":{"phase":"Failed","containerStatuses":[{"name":"vllm","ready":false,"restartCount":4}]}}', { subresource: 'status' });
      await seen(/engine-0\s+0\/1\s+Failed\s+4/);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('describes a pod', async () => {
    const pod = api.resources.get(api.kinds.find('', 'v1', 'pods')!, 'default', 'engine-0');
    // kubectl selects the pod's events by involvedObject name, namespace and uid.
    api.put({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'engine-0.1', namespace: 'default' }, involvedObject: { kind: 'Pod', name: 'engine-0', namespace: 'default', uid: pod.metadata.uid }, reason: 'Scheduled', message: 'assigned to gpu-node-1', type: 'Normal' });
    const out = await ok('describe', 'pod', 'engine-0');
    expect(out).toMatch(/Name:\s+engine-0/);
    expect(out).toMatch(/Node:\s+gpu-node-1/);
    expect(out).toMatch(/Image:\s+vllm\/vllm-openai:v0\.11\.0/);
    expect(out).toMatch(/Scheduled\s+.*assigned to gpu-node-1/);
  });

  it('reads the protobuf bodies of kubectl create, and names the kinds it cannot', async () => {
    expect(await ok('create', 'namespace', 'gpu-team')).toContain('namespace/gpu-team created');
    await ok('create', 'configmap', 'engine-args', '-n', 'gpu-team', '--from-literal=model=llama', '--from-literal=tp=2');
    expect(await ok('get', 'configmap', 'engine-args', '-n', 'gpu-team', '-o', 'jsonpath={.data}')).toBe('{"model":"llama","tp":"2"}');
    await ok('create', 'secret', 'generic', 'hf-token', '-n', 'gpu-team', '--from-literal=token=abc');
    expect(await ok('get', 'secret', 'hf-token', '-n', 'gpu-team', '-o', 'jsonpath={.data.token} {.type}')).toBe('YWJj Opaque');
    const refused = await kubectl('create', 'deployment', 'web', '--image=nginx');
    expect(refused.stderr).toContain('the simulator reads protobuf only for ConfigMap, Secret, Namespace and ServiceAccount');
  });

  it('labels and selects', async () => {
    expect(await ok('label', 'pod', 'engine-0', 'tier=gpu')).toContain('pod/engine-0 labeled');
    expect(await ok('get', 'pods', '-l', 'tier in (gpu,cpu),app', '-o', 'name')).toBe('pod/engine-0\n');
    expect(await ok('get', 'pods', '-l', '!tier', '-o', 'name')).toBe('');
    expect(await ok('label', 'gp', 'h100', 'pool=a')).toContain('gpupool.gpufleet.io/h100 labeled');
  });

  it('deletes, collecting dependents and waiting on finalizers', async () => {
    const cm = api.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner' }, data: {} });
    api.put({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'dependent', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: cm.metadata.uid ?? '' }] },
    });
    expect(await ok('delete', 'configmap', 'owner')).toContain('configmap "owner" deleted');
    expect((await kubectl('get', 'secret', 'dependent')).stderr).toContain('secrets "dependent" not found');

    api.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'guarded', finalizers: ['gpufleet.io/cleanup'] }, data: {} });
    await ok('delete', 'configmap', 'guarded', '--wait=false');
    expect(await ok('get', 'configmap', 'guarded', '-o', 'jsonpath={.metadata.deletionTimestamp}')).not.toBe('');
    await ok('patch', 'configmap', 'guarded', '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]');
    expect((await kubectl('get', 'configmap', 'guarded')).stderr).toContain('not found');

    expect(await ok('delete', 'pod', 'engine-0')).toContain('pod "engine-0" deleted');
    expect(await ok('get', 'pods', '-o', 'name')).toBe('');
  });
});

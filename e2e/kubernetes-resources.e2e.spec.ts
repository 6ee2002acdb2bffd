import { execFileSync, spawn, spawnSync, type ChildProcess } from 'child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import OpenAI from 'openai';
import { runKubectl, RunningServer, startKubeApiServer, startKubeletSimulator, startNats, startRedis, waitFor, type KubeApiServer, type KubeletSimulator, type KubectlRun } from '@gpufleet/testing';
import { gpufleet } from './support/cli';
import { REPO_ROOT, ServiceStack } from './support/services';

/**
 * The custom resources on the kubernetes runtime, end to end: the same processes as
 * kubernetes.e2e.spec.ts (API server simulator, kubelet simulator on h100-0 and h100-1, one agent
 * per node with DEVICE_PLUGIN=on, router) and a scheduler with RUNTIME=kubernetes and
 * KUBE_CUSTOM_RESOURCES=true. A ModelDeployment applied with kubectl runs as a Pod, is Ready in
 * kubectl and the CLI, answers the official OpenAI client through the router, and the mirrored
 * InstanceType streams its capacity going down and up again to `kubectl get instancetypes -w`.
 */
jest.setTimeout(180_000);

const NODES = ['h100-0', 'h100-1'];
const ADMIN = 'kubernetes-resources-e2e-admin-token-0123456789';
const MODEL = 'llama-3.1-8b';
const NS = 'gpufleet';
const TYPE = 'h100-80gb-hbm3-x86-64.1x';
const QUEUES = `kind: ClusterQueue
name: h100
pool: h100-80gb-hbm3-x86-64
queueingStrategy: BestEffortFIFO
nominalQuota: 19200000
---
kind: LocalQueue
namespace: team-a
name: default
clusterQueue: h100
`;
/** Like the CLI's `deploy /models/llama-3.1-8b --instance-type …1x`: engine-sim runs it on simulated nodes. */
const MANIFEST = `apiVersion: gpufleet.io/v1
kind: ModelDeployment
metadata:
  name: llama
  namespace: team-a
spec:
  model: /models/${MODEL}
  servedModelName: ${MODEL}
  engine:
    engine: vllm
  roles:
    - role: server
      replicas: 1
      instanceType: ${TYPE}
`;
/** A GPU instance of one card with the test's key; the kubelet simulator runs its sshd sidecar as a real sshd. */
const instanceManifest = (publicKey: string): string => `apiVersion: gpufleet.io/v1
kind: GPUInstance
metadata:
  name: dev-box
  namespace: team-a
spec:
  instanceType: ${TYPE}
  sshPublicKeys:
    - ${publicKey}
  env:
    WANDB_PROJECT: experiments
`;
const WAIT = { timeoutMs: 60_000, intervalMs: 250 };

/** A row of `kubectl get instancetypes`: NAME POOL ACCELERATOR(with spaces) UNIT WHOLE SHARED SLICED-MIB READY-NODES CREDITS AGE. */
function instanceTypeRow(line: string): { name: string; whole: number; readyNodes: number } | undefined {
  const cells = line.trim().split(/\s+/);
  if (cells.length < 10 || cells[0] === 'NAME') return undefined;
  const n = cells.length;
  return { name: cells[0], whole: Number(cells[n - 6]), readyNodes: Number(cells[n - 3]) };
}

describe('the gpufleet.io custom resources on simulated Kubernetes nodes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpufleet-kube-crs-e2e-'));
  const home = join(dir, 'home');
  let nats: RunningServer;
  let redis: RunningServer;
  let api: KubeApiServer;
  let kubelet: KubeletSimulator;
  let stack: ServiceStack;
  let core: CoreV1Api;
  let scheduler: { address: string };
  let router: { base: string };
  let watcher: ChildProcess | undefined;

  const cli = (...args: string[]) => gpufleet([...args, '--scheduler', scheduler.address, '--home', home], { GPUFLEET_ADMIN_TOKEN: ADMIN });
  const kubectlArgs = (args: string[]) => ['--kubeconfig', api.kubeconfigPath, '--cache-dir', join(dir, 'kube-cache'), ...args];
  const kubectl = (...args: string[]): Promise<KubectlRun> => runKubectl(api.kubeconfigPath, join(dir, 'kube-cache'), args, 60_000);
  const pods = async (): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: NS, labelSelector: 'gpufleet.io/deployment=llama' })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const readyPods = async (): Promise<V1Pod[]> => (await pods()).filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
  const when = async <T>(what: string, probe: () => Promise<T | undefined>): Promise<T> =>
    waitFor(what, probe, WAIT).catch(async (err: Error) => {
      const listed = await kubectl('get', 'pods,md', '-A', '-o', 'wide');
      throw new Error(`${err.message}\nkubectl get pods,md:\n${listed.stdout}${listed.stderr}\nkubelet simulator errors:\n${kubelet.errors.join('\n')}\nlogs: ${stack.logs}, ${kubelet.logDir}`);
    });
  const chat = async (): Promise<string> => {
    const client = new OpenAI({ baseURL: `${router.base}/v1`, apiKey: 'not-required', maxRetries: 0, timeout: 10_000 });
    const answer = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 5 });
    expect(answer.object).toBe('chat.completion');
    expect(answer.model).toBe(MODEL);
    return answer.choices[0]?.message?.content ?? '';
  };
  const freeWhole = async (): Promise<number | undefined> => {
    const got = await kubectl('get', 'instancetype', TYPE, '-o', 'jsonpath={.status.capacity.whole.remaining}');
    return got.code === 0 && got.stdout !== '' ? Number(got.stdout) : undefined;
  };

  beforeAll(async () => {
    [nats, redis, api] = await Promise.all([startNats(), startRedis(), startKubeApiServer()]);
    const kc = new KubeConfig();
    kc.loadFromOptions(api.kubeConfig());
    core = kc.makeApiClient(CoreV1Api);
    kubelet = await startKubeletSimulator({ api, nodes: NODES.map((name) => ({ name })), podIpPrefix: '127.0.5.', heartbeatMs: 2_000, logDir: join(dir, 'kubelet') });
    stack = new ServiceStack(nats.url);
    const crds = await kubectl('apply', '--server-side', '-f', join(REPO_ROOT, 'charts/gpufleet/crds/'));
    expect(crds.stderr).toBe('');
    scheduler = await stack.scheduler({ RUNTIME: 'kubernetes', KUBE_CUSTOM_RESOURCES: 'true', KUBECONFIG: api.kubeconfigPath, GPUFLEET_ADMIN_TOKEN: ADMIN });
    await Promise.all(
      NODES.map((n) =>
        stack.agent(n, { HEARTBEAT_INTERVAL_S: '1', DEVICE_PLUGIN: 'on', DEVICE_PLUGIN_DIR: kubelet.devicePluginDir(n), POD_RESOURCES_DIR: kubelet.podResourcesDir(n) }),
      ),
    );
    router = await stack.router(redis.url, { AUTH_REQUIRED: 'false' });
  });

  afterAll(async () => {
    watcher?.kill('SIGKILL');
    await stack?.stop();
    await kubelet?.stop();
    await api?.close();
    await redis?.dispose();
    await nats?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('mirrors the InstanceTypes with the live capacity of both nodes', async () => {
    for (const name of NODES) {
      await when(`${name} allocatable gpufleet.io/nvidia-gpu 8`, async () => ((await core.readNode({ name })).status?.allocatable?.['gpufleet.io/nvidia-gpu'] === '8' ? true : undefined));
    }
    await when(`${TYPE} with 16 whole accelerators free`, async () => ((await freeWhole()) === 16 ? true : undefined));
    const listed = await kubectl('get', 'instancetypes');
    expect(listed.stderr).toBe('');
    const row = listed.stdout.split('\n').map(instanceTypeRow).find((r) => r?.name === TYPE);
    expect(row).toEqual({ name: TYPE, whole: 16, readyNodes: 2 });
  });

  it('runs a ModelDeployment applied with kubectl as a Ready Pod that answers through the router, and deletes it with kubectl delete md', async () => {
    // The watch runs through the whole life of the deployment; its stdout is read as it comes.
    let streamed = '';
    watcher = spawn('/usr/bin/kubectl', kubectlArgs(['get', 'instancetypes', '-w']), { stdio: ['ignore', 'pipe', 'pipe'] });
    watcher.stdout!.setEncoding('utf8').on('data', (chunk: string) => (streamed += chunk));
    watcher.stderr!.setEncoding('utf8').on('data', (chunk: string) => (streamed += chunk));
    const rows = () => streamed.split('\n').map(instanceTypeRow).filter((r) => r?.name === TYPE) as Array<{ whole: number }>;
    await when('the watch to list the InstanceType', async () => (rows().length > 0 ? true : undefined));
    expect(rows()[0].whole).toBe(16);

    const queuesFile = join(dir, 'queues.yaml');
    writeFileSync(queuesFile, QUEUES);
    const queues = await cli('submit', '-f', queuesFile);
    expect(queues.stderr).toBe('');
    expect((await kubectl('create', 'namespace', 'team-a')).code).toBe(0);
    const manifest = join(dir, 'llama.yaml');
    writeFileSync(manifest, MANIFEST);
    const applied = await kubectl('apply', '-f', manifest);
    expect(applied.stderr).toBe('');
    expect(applied.stdout).toMatch(/modeldeployment\.gpufleet\.io\/llama created/);

    const [pod] = await when('one Ready Pod', async () => {
      const ready = await readyPods();
      return ready.length === 1 ? ready : undefined;
    });
    expect(NODES).toContain(pod.spec!.nodeName);
    expect(pod.status!.podIP).toMatch(/^127\.0\.5\.\d+$/);
    expect(pod.spec!.containers[0].image).toMatch(/gpufleet\/engine-sim/);
    const ip = pod.status!.podIP!.replace(/\./g, '\\.');
    const wide = await kubectl('get', 'pods', '-n', NS, '-o', 'wide');
    expect(wide.stdout).toMatch(new RegExp(`${pod.metadata!.name}\\s+1/1\\s+Running\\s+0\\s+\\S+\\s+${ip}\\s+${pod.spec!.nodeName}`));

    // The object's status, through its printer columns: READY 1, PHASE Ready, the endpoint.
    const md = await when('kubectl get md: READY 1, PHASE Ready', async () => {
      const got = await kubectl('get', 'md', '-n', 'team-a');
      return /\n\s*llama\s/.test(got.stdout) && new RegExp(`llama\\s+/models/${MODEL}\\s+vllm\\s+1\\s+1\\s+Ready\\s`).test(got.stdout) ? got : undefined;
    });
    expect(md.stdout).toMatch(/^NAME\s+MODEL\s+ENGINE\s+REPLICAS\s+READY\s+PHASE\s+ENDPOINT\s+AGE\n/);
    expect(md.stdout).toMatch(new RegExp(`llama\\s+/models/${MODEL}\\s+vllm\\s+1\\s+1\\s+Ready\\s+http://${ip}:\\d+\\s+\\S+\\n`));
    const available = await kubectl('wait', '--for=condition=Accepted', 'md/llama', '-n', 'team-a', '--timeout=10s');
    expect(available.code).toBe(0);
    const listed = await cli('get', 'deployments', '-n', 'team-a');
    expect(listed.stdout).toMatch(/llama/);
    const one = await cli('get', 'deployments', 'llama', '-n', 'team-a', '-o', 'json');
    expect((JSON.parse(one.stdout) as { status?: { phase?: string } }).status?.phase).toBe('DEPLOYMENT_PHASE_READY');

    await when('the router to serve the model', async () => (await chat().catch(() => undefined)) !== undefined || undefined);
    expect(typeof (await chat())).toBe('string');

    // The replica holds one accelerator: the watch streamed a row with one fewer free.
    await when('the watch to stream 15 free', async () => (rows().some((r) => r.whole === 15) ? true : undefined));

    const deleted = await kubectl('delete', 'md', 'llama', '-n', 'team-a');
    expect(deleted.stderr).toBe('');
    expect(deleted.stdout).toMatch(/modeldeployment\.gpufleet\.io "llama" deleted/);
    expect((await kubectl('get', 'md', '-n', 'team-a', 'llama')).code).not.toBe(0);
    await when('the Pod gone', async () => ((await core.listNamespacedPod({ namespace: NS, labelSelector: 'gpufleet.io/deployment=llama' })).items.length === 0 ? true : undefined));
    const lowest = rows().findIndex((r) => r.whole === 15);
    await when('the watch to stream 16 free again', async () => (rows().slice(lowest).some((r) => r.whole === 16) ? true : undefined));
    const gone = await cli('get', 'deployments', 'llama', '-n', 'team-a', '-o', 'json');
    expect(gone.code).not.toBe(0);
    watcher.kill('SIGTERM');
    watcher = undefined;
  });

  it('runs a GPUInstance applied with kubectl: Running, and a real ssh login to its sshd on the pod IP succeeds', async () => {
    const key = join(dir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'kube-e2e', '-f', key]);
    const manifest = join(dir, 'dev-box.yaml');
    writeFileSync(manifest, instanceManifest(readFileSync(`${key}.pub`, 'utf8').trim()));
    const applied = await kubectl('apply', '-f', manifest);
    expect(applied.stderr).toBe('');
    expect(applied.stdout).toMatch(/gpuinstance\.gpufleet\.io\/dev-box created/);
    await when('kubectl get gi: PHASE Running', async () => {
      const got = await kubectl('get', 'gi', '-n', 'team-a', 'dev-box', '-o', 'jsonpath={.status.phase}');
      return got.stdout === 'Running' ? true : undefined;
    });
    const [pod] = await when('the instance Pod Ready', async () => {
      const items = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'gpufleet.io/instance=dev-box' })).items;
      return items.length === 1 && items[0].status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? items : undefined;
    });
    // What gpufleet reports for SSH (a ClusterIP Service: the pod IP and sshd's port) is where the login goes.
    const status = (JSON.parse((await kubectl('get', 'gi', '-n', 'team-a', 'dev-box', '-o', 'json')).stdout) as { status: { node: string; sshHost: string; sshPort: number } }).status;
    // sshUser names the sshd image's user; the simulator's sshd logs in the local account it runs as (userOf).
    expect(status).toMatchObject({ node: pod.spec!.nodeName, sshHost: pod.status!.podIP, sshPort: 2222, sshUser: 'gpufleet' });
    const listed = await kubectl('get', 'gi', '-n', 'team-a');
    expect(listed.stdout).toMatch(new RegExp(`dev-box\\s+${TYPE.replace(/\./g, '\\.')}\\s+Running\\s+${pod.spec!.nodeName}\\s+${status.sshHost.replace(/\./g, '\\.')}\\s+2222\\s`));
    expect(pod.spec!.containers.map((c) => c.name)).toEqual(['workload', 'sshd']);
    expect(pod.spec!.containers[1].image).toMatch(/gpufleet\/sshd/);
    const wide = await kubectl('get', 'pods', '-n', NS, '-o', 'wide');
    expect(wide.stdout).toMatch(new RegExp(`${pod.metadata!.name}\\s+2/2\\s+Running\\s+0\\s+\\S+\\s+${pod.status!.podIP!.replace(/\./g, '\\.')}\\s+${pod.spec!.nodeName}`));
    const user = kubelet.userOf(NS, pod.metadata!.name!, 'sshd')!;
    const ssh = spawnSync(
      'ssh',
      ['-F', '/dev/null', '-p', String(status.sshPort), '-i', key, '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-o', 'ConnectTimeout=10', `${user}@${status.sshHost}`, 'echo "login $(id -un) $WANDB_PROJECT $GPUFLEET_POD"'],
      { encoding: 'utf8', timeout: 20_000 },
    );
    // sshd (not root) logs in the one user it runs as; that user's home may not exist here.
    expect(ssh.stderr.replace(/Could not chdir to home directory .*\r?\n/, '')).toBe('');
    expect(ssh.status).toBe(0);
    expect(ssh.stdout).toMatch(new RegExp(`^login ${user} experiments \\S+\\n$`));

    const deleted = await kubectl('delete', 'gi', 'dev-box', '-n', 'team-a');
    expect(deleted.stdout).toMatch(/gpuinstance\.gpufleet\.io "dev-box" deleted/);
    await when('the instance Pod gone', async () => ((await core.listNamespacedPod({ namespace: NS, labelSelector: 'gpufleet.io/instance=dev-box' })).items.length === 0 ? true : undefined));
  });
});

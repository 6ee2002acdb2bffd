import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import OpenAI from 'openai';
import { ManagedProcess, runKubectl, RunningServer, startKubeApiServer, startKubeletSimulator, startNats, startRedis, waitFor, type KubeApiServer, type KubeletSimulator, type KubectlRun } from '@gpufleet/testing';
import { gpufleet } from './support/cli';
import { REPO_ROOT, ServiceStack } from './support/services';

/**
 * The kubernetes runtime end to end with real processes and nothing acting by hand: the API
 * server simulator, the kubelet simulator on two simulated nodes (h100-0, h100-1 of the dev fleet),
 * one device-discovery agent per node serving the device plugins (DEVICE_PLUGIN=on) to that
 * node's kubelet.sock, a scheduler with RUNTIME=kubernetes and the inference router. A deployment
 * made with the CLI runs as a Pod the kubelet simulator runs (engine-sim on a loopback pod IP)
 * and answers the official OpenAI client through the router.
 */
jest.setTimeout(180_000);

const NODES = ['h100-0', 'h100-1'];
const ADMIN = 'kubernetes-e2e-admin-token-0123456789abcdef';
const MODEL = 'llama-3.1-8b';
const NS = 'gpufleet';
/** The H100 queue of examples/workloads/queues.yaml: the other pools have no node here. */
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
const WAIT = { timeoutMs: 60_000, intervalMs: 250 };

describe('the kubernetes runtime on simulated Kubernetes nodes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpufleet-kube-e2e-'));
  const home = join(dir, 'home');
  let nats: RunningServer;
  let redis: RunningServer;
  let api: KubeApiServer;
  let kubelet: KubeletSimulator;
  let stack: ServiceStack;
  let core: CoreV1Api;
  let scheduler: { address: string; proc: ManagedProcess };
  let schedulerEnv: Record<string, string>;
  let router: { base: string };

  const cli = (...args: string[]) => gpufleet([...args, '--scheduler', scheduler.address, '--home', home], { GPUFLEET_ADMIN_TOKEN: ADMIN });
  const kubectl = (...args: string[]): Promise<KubectlRun> => runKubectl(api.kubeconfigPath, join(dir, 'kube-cache'), args, 30_000);
  const pods = async (): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: NS, labelSelector: 'gpufleet.io/deployment=llama' })).items.filter((p) => !p.metadata?.deletionTimestamp);
  const readyPods = async (): Promise<V1Pod[]> => (await pods()).filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
  const deploymentPhase = async (): Promise<string | undefined> => {
    const res = await cli('get', 'deployments', 'llama', '-n', 'team-a', '-o', 'json');
    return res.code === 0 ? (JSON.parse(res.stdout) as { status?: { phase?: string } }).status?.phase : undefined;
  };
  const when = async <T>(what: string, probe: () => Promise<T | undefined>): Promise<T> =>
    waitFor(what, probe, WAIT).catch(async (err: Error) => {
      const listed = await kubectl('get', 'pods', '-A', '-o', 'wide');
      throw new Error(`${err.message}\nkubectl get pods:\n${listed.stdout}${listed.stderr}\nkubelet simulator errors:\n${kubelet.errors.join('\n')}\nlogs: ${stack.logs}, ${kubelet.logDir}`);
    });
  const chat = async (): Promise<string> => {
    const client = new OpenAI({ baseURL: `${router.base}/v1`, apiKey: 'not-required', maxRetries: 0, timeout: 10_000 });
    const answer = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 5 });
    expect(answer.object).toBe('chat.completion');
    expect(answer.model).toBe(MODEL);
    return answer.choices[0]?.message?.content ?? '';
  };

  beforeAll(async () => {
    [nats, redis, api] = await Promise.all([startNats(), startRedis(), startKubeApiServer()]);
    const kc = new KubeConfig();
    kc.loadFromOptions(api.kubeConfig());
    core = kc.makeApiClient(CoreV1Api);
    kubelet = await startKubeletSimulator({ api, nodes: NODES.map((name) => ({ name })), podIpPrefix: '127.0.4.', heartbeatMs: 2_000, logDir: join(dir, 'kubelet') });
    stack = new ServiceStack(nats.url);
    const crds = await kubectl('apply', '--server-side', '-f', join(REPO_ROOT, 'charts/gpufleet/crds/'));
    expect(crds.stderr).toBe('');
    schedulerEnv = { RUNTIME: 'kubernetes', KUBECONFIG: api.kubeconfigPath, GPUFLEET_ADMIN_TOKEN: ADMIN };
    scheduler = await stack.scheduler(schedulerEnv);
    await Promise.all(
      NODES.map((n) =>
        stack.agent(n, { HEARTBEAT_INTERVAL_S: '1', DEVICE_PLUGIN: 'on', DEVICE_PLUGIN_DIR: kubelet.devicePluginDir(n), POD_RESOURCES_DIR: kubelet.podResourcesDir(n) }),
      ),
    );
    router = await stack.router(redis.url, { AUTH_REQUIRED: 'false' });
  });

  afterAll(async () => {
    await stack?.stop();
    await kubelet?.stop();
    await api?.close();
    await redis?.dispose();
    await nats?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('publishes the agents’ device plugins as the Nodes’ allocatable', async () => {
    for (const name of NODES) {
      await when(`${name} allocatable gpufleet.io/nvidia-gpu 8`, async () => ((await core.readNode({ name })).status?.allocatable?.['gpufleet.io/nvidia-gpu'] === '8' ? true : undefined));
    }
    const nodes = await kubectl('get', 'nodes');
    for (const name of NODES) expect(nodes.stdout).toMatch(new RegExp(`${name}\\s+Ready\\s`));
  });

  it('runs a deployment made with the CLI as a Pod on a simulated node, Ready, answering through the router', async () => {
    const queuesFile = join(dir, 'queues.yaml');
    writeFileSync(queuesFile, QUEUES);
    const queues = await cli('submit', '-f', queuesFile);
    expect(queues.stderr).toBe('');
    expect(queues.code).toBe(0);
    const deployed = await cli('deploy', `/models/${MODEL}`, '--name', 'llama', '-n', 'team-a', '--instance-type', 'h100-80gb-hbm3-x86-64.1x', '--wait', '--timeout', '90');
    expect(deployed.stderr).toBe('');
    expect(deployed.code).toBe(0);
    const [pod] = await when('one Ready Pod', async () => {
      const ready = await readyPods();
      return ready.length === 1 ? ready : undefined;
    });
    expect(NODES).toContain(pod.spec!.nodeName);
    expect(pod.status!.podIP).toMatch(/^127\.0\.4\.\d+$/);
    expect(pod.spec!.containers[0].image).toMatch(/gpufleet\/engine-sim/);
    // The device plugin's Allocate gave the container the card the scheduler chose.
    const devices = JSON.parse(pod.metadata!.annotations!['gpufleet.io/devices']) as { accelerators: Array<{ uuid: string }> };
    const uuid = devices.accelerators[0].uuid;
    expect(uuid).toMatch(/^GPU-/);
    const held = kubelet.node(pod.spec!.nodeName!).podResources.pods.find((p) => p.name === pod.metadata!.name);
    expect(held?.containers[0].devices[0]).toMatchObject({ resourceName: 'gpufleet.io/nvidia-gpu', deviceIds: [uuid] });

    const wide = await kubectl('get', 'pods', '-n', NS, '-o', 'wide');
    expect(wide.stdout).toMatch(new RegExp(`${pod.metadata!.name}\\s+1/1\\s+Running\\s+0\\s+\\S+\\s+${pod.status!.podIP!.replace(/\./g, '\\.')}\\s+${pod.spec!.nodeName}`));
    const listed = await cli('get', 'deployments', '-n', 'team-a');
    expect(listed.stdout).toMatch(/llama/);
    expect(await deploymentPhase()).toBe('DEPLOYMENT_PHASE_READY');

    await when('the router to serve the model', async () => (await chat().catch(() => undefined)) !== undefined || undefined);
    expect(typeof (await chat())).toBe('string');
  });

  it('re-registers the device plugins after a kubelet restart', async () => {
    const name = NODES[0];
    const before = kubelet.node(name).devicePlugins.registrations.length;
    await kubelet.restart(name);
    await when('the agent to register again', async () => (kubelet.node(name).devicePlugins.registrations.length > before ? true : undefined));
    await when(`${name} allocatable back to 8`, async () => ((await core.readNode({ name })).status?.allocatable?.['gpufleet.io/nvidia-gpu'] === '8' ? true : undefined));
  });

  it('keeps the Pods when the scheduler is killed and restarted', async () => {
    const before = (await pods()).map((p) => [p.metadata!.name, p.metadata!.uid]);
    expect(before).toHaveLength(1);
    scheduler.proc.child.kill('SIGKILL');
    await scheduler.proc.exited;
    scheduler = await stack.scheduler(schedulerEnv);
    await when('the deployment Ready after the restart', async () => ((await deploymentPhase()) === 'DEPLOYMENT_PHASE_READY' ? true : undefined));
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await pods()).map((p) => [p.metadata!.name, p.metadata!.uid])).toEqual(before);
    expect(await deploymentPhase()).toBe('DEPLOYMENT_PHASE_READY');
    expect(typeof (await chat())).toBe('string');
  });

  it('on a drain, the replica moves to the other node and answers again', async () => {
    const [pod] = await pods();
    const node = pod.spec!.nodeName!;
    const drained = await kubectl('drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--force', '--timeout', '30s');
    expect(drained.code).toBe(0);
    // Without the custom resources the Pods have no owner reference, hence --force and kubectl's warning.
    expect(drained.stderr.replace(/Warning: deleting Pods that declare no controller: \S+\n/, '')).toBe('');
    expect(drained.stdout).toMatch(/drained/);
    // The runtime starts no Pod on a cordoned Node; the deployment controller sees the replica's
    // pod gone from a drained node and places a new replica elsewhere.
    const [again] = await when('a new Ready Pod on another node', async () => {
      const ready = await readyPods();
      return ready.length === 1 && ready[0].metadata!.uid !== pod.metadata!.uid && ready[0].spec!.nodeName !== node ? ready : undefined;
    });
    expect(again.spec!.nodeName).not.toBe(node);
    expect((await kubectl('get', 'nodes')).stdout).toMatch(new RegExp(`${node}\\s+Ready,SchedulingDisabled`));
    await when('the deployment Ready again', async () => ((await deploymentPhase()) === 'DEPLOYMENT_PHASE_READY' ? true : undefined));
    expect(typeof (await chat())).toBe('string');
    expect((await kubectl('uncordon', node)).code).toBe(0);
  });
});

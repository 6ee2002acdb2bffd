// The kubelet simulator against the API server simulator, driven with kubectl: a Pod of the
// engine-sim image runs as a real process on its own loopback IP, becomes Ready, answers HTTP,
// is restarted after a crash and killed on delete; a GPU instance's Pod runs its sshd sidecar as a
// real sshd on the pod IP that the real ssh client logs in to; what it cannot run fails clearly.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { waitFor } from '@gpufleet/process-kit';
import { runKubectl, startKubeApiServer, type KubectlRun, type KubeApiServer } from '../kube-apiserver';
import { startKubeletSimulator, type KubeletSimulator } from './kubelet-simulator';

jest.setTimeout(120_000);

const WAIT = { timeoutMs: 30_000, intervalMs: 100 };
let api: KubeApiServer;
let sim: KubeletSimulator;
let core: CoreV1Api;
let dir: string;

const kubectl = (...args: string[]): Promise<KubectlRun> => runKubectl(api.kubeconfigPath, join(dir, 'cache'), args);

function enginePod(name: string, image = 'gpufleet/engine-sim:latest', extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName: 'sim-0',
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'engine',
          image,
          command: ['node'],
          args: ['-r', 'reflect-metadata', 'dist/apps/engine-sim/src/main.js', 'serve', '/models/tiny', '--served-model-name', 'tiny', '--host', '0.0.0.0', '--port', '8000'],
          env: [{ name: 'REPLICA_NAME', value: name }],
          ports: [{ name: 'http', containerPort: 8000 }],
          readinessProbe: { httpGet: { path: '/health', port: 'http' }, periodSeconds: 5 },
          ...extra,
        },
      ],
    },
  });
}

async function apply(name: string, body: string): Promise<void> {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, body);
  const res = await kubectl('apply', '-f', file);
  expect(res.stderr).toBe('');
}

const pod = (name: string): Promise<V1Pod> => core.readNamespacedPod({ name, namespace: 'default' });
async function podWhen(name: string, what: string, ok: (p: V1Pod) => boolean): Promise<V1Pod> {
  let last: V1Pod | undefined;
  return waitFor(
    `${name}: ${what}`,
    async () => {
      last = await pod(name).catch(() => undefined);
      return last && ok(last) ? last : undefined;
    },
    WAIT,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\nlast status: ${JSON.stringify(last?.status)}\nsimulator errors: ${sim.errors.join('\n')}`);
  });
}
const isReady = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpufleet-kubelet-sim-spec-'));
  api = await startKubeApiServer();
  const kc = new KubeConfig();
  kc.loadFromOptions(api.kubeConfig());
  core = kc.makeApiClient(CoreV1Api);
  sim = await startKubeletSimulator({ api, nodes: [{ name: 'sim-0', labels: { 'gpufleet.io/pool': 'test' } }], podIpPrefix: '127.0.3.', heartbeatMs: 1000 });
});

afterAll(async () => {
  await sim?.stop();
  await api?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('registers a Ready Node with capacity and a heartbeat', async () => {
  const node = await core.readNode({ name: 'sim-0' });
  expect(node.metadata?.labels).toMatchObject({ 'kubernetes.io/hostname': 'sim-0', 'gpufleet.io/pool': 'test' });
  expect(node.status?.capacity).toMatchObject({ cpu: '64', memory: '512Gi', pods: '110' });
  expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  const first = String(node.status?.conditions?.find((c) => c.type === 'Ready')?.lastHeartbeatTime);
  await waitFor('a newer heartbeat', async () => {
    const again = await core.readNode({ name: 'sim-0' });
    return String(again.status?.conditions?.find((c) => c.type === 'Ready')?.lastHeartbeatTime) !== first || undefined;
  }, WAIT);
  expect((await kubectl('get', 'nodes')).stdout).toMatch(/sim-0\s+Ready\s/);
});

it('runs an engine-sim Pod: Ready on its own IP, answers HTTP, restarts after a crash, is killed on delete', async () => {
  await apply('engine', enginePod('engine'));
  const ready = await podWhen('engine', 'Ready', isReady);
  const ip = ready.status!.podIP!;
  expect(ip).toMatch(/^127\.0\.3\.\d+$/);
  expect(ready.status?.phase).toBe('Running');
  expect(ready.status?.containerStatuses?.[0]).toMatchObject({ name: 'engine', ready: true, restartCount: 0, state: { running: {} } });
  expect(ready.status?.conditions?.find((c) => c.type === 'ContainersReady')?.status).toBe('True');
  const models = (await (await fetch(`http://${ip}:8000/v1/models`)).json()) as { data: Array<{ id: string }> };
  expect(models.data.map((m) => m.id)).toEqual(['tiny']);
  expect((await kubectl('get', 'pods', '-o', 'wide')).stdout).toMatch(new RegExp(`engine\\s+1/1\\s+Running\\s+0\\s+\\S+\\s+${ip.replace(/\./g, '\\.')}\\s+sim-0`));

  // A crash: the container comes back with restartCount 1 and the last state recorded.
  const proc = sim.processOf('default', 'engine')!;
  expect(proc.pid).toBeGreaterThan(0);
  proc.kill('SIGKILL');
  const restarted = await podWhen('engine', 'restarted and Ready', (p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) === 1 && isReady(p));
  expect(restarted.status?.containerStatuses?.[0]?.lastState?.terminated).toMatchObject({ exitCode: 137, reason: 'Error' });
  expect(restarted.status?.podIP).toBe(ip);
  const again = sim.processOf('default', 'engine')!;
  expect(again.pid).not.toBe(proc.pid);
  expect((await fetch(`http://${ip}:8000/health`)).status).toBe(200);

  // Delete: the process is stopped (SIGTERM) and the address stops answering.
  expect((await kubectl('delete', 'pod', 'engine', '--wait=false')).code).toBe(0);
  await waitFor('the engine process gone', () => (again.exitCode !== null || again.signalCode !== null ? true : undefined), WAIT);
  expect(sim.processOf('default', 'engine')).toBeUndefined();
  await expect(fetch(`http://${ip}:8000/health`)).rejects.toThrow();
});

it('fails a Pod it cannot run (another image) or cannot admit (devices the node lacks)', async () => {
  await apply('other', enginePod('other', 'vllm/vllm-openai:v0.11.0'));
  const other = await podWhen('other', 'Failed', (p) => p.status?.phase === 'Failed');
  expect(other.status?.reason).toBe('ErrImagePull');
  expect(other.status?.message).toMatch(/runs only gpufleet\/engine-sim/);

  await apply('greedy', enginePod('greedy', undefined, { resources: { limits: { 'gpufleet.io/nvidia-gpu': '1' } } }));
  const greedy = await podWhen('greedy', 'Failed', (p) => p.status?.phase === 'Failed');
  expect(greedy.status?.reason).toBe('OutOfgpufleet.io/nvidia-gpu');
  expect(sim.processOf('default', 'greedy')).toBeUndefined();
});

/**
 * The sidecar's start, shortened from SSHD_SCRIPT (libs/kube-runtime-core/src/pod-manifest.ts;
 * importing it here would make a dependency cycle; e2e/kubernetes-resources.e2e.spec.ts runs the
 * real one): a host key in the sshd volume, the authorized keys with the session environment,
 * sshd in the foreground on $SSH_PORT.
 */
const SSHD_SCRIPT = [
  'set -eu',
  'd=/run/gpufleet-sshd',
  'ssh-keygen -q -t ed25519 -N "" -f "$d/ssh_host_ed25519_key"',
  'umask 077',
  'printf \'environment="GPUFLEET_POD=%s",environment="TEAM=%s" %s\\n\' "$GPUFLEET_POD" "$TEAM" "$GPUFLEET_AUTHORIZED_KEYS" > "$d/authorized_keys"',
  'exec /usr/sbin/sshd -D -e -f /dev/null -p "$SSH_PORT" -h "$d/ssh_host_ed25519_key" -o PidFile=none -o AuthorizedKeysFile="$d/authorized_keys" ' +
    '-o PasswordAuthentication=no -o KbdInteractiveAuthentication=no -o PermitRootLogin=no -o PermitUserEnvironment=yes -o StrictModes=no -o UsePAM=no',
].join('\n');

/** An instance Pod as libs/kube-runtime-core's pod manifest makes it: a workload and the sshd sidecar. */
function instancePod(name: string, publicKey: string): string {
  const securityContext = { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true, allowPrivilegeEscalation: false };
  const env = [
    { name: 'GPUFLEET_POD', value: name },
    { name: 'TEAM', value: 'team a' },
  ];
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName: 'sim-0',
      terminationGracePeriodSeconds: 5,
      shareProcessNamespace: true,
      securityContext: { fsGroup: 1000 },
      containers: [
        { name: 'workload', image: 'nvidia/cuda:12.6.3-base-ubuntu24.04', command: ['/bin/sh', '-c', 'echo $HOME > "$HOME/workload-ran"; exec sleep infinity'], env: [...env, { name: 'HOME', value: '/home/gpufleet' }], workingDir: '/home/gpufleet', securityContext, volumeMounts: [{ name: 'home', mountPath: '/home/gpufleet' }] },
        {
          name: 'sshd',
          image: 'gpufleet/sshd:latest',
          command: ['/bin/sh', '-c', SSHD_SCRIPT],
          env: [
            ...env,
            { name: 'HOME', value: '/home/gpufleet' },
            { name: 'SSH_PORT', value: '2222' },
            { name: 'GPUFLEET_AUTHORIZED_KEYS', value: publicKey },
            { name: 'GPUFLEET_SESSION_ENV', value: 'GPUFLEET_POD TEAM' },
          ],
          workingDir: '/home/gpufleet',
          ports: [{ name: 'ssh', containerPort: 2222 }],
          readinessProbe: { tcpSocket: { port: 'ssh' }, periodSeconds: 5 },
          securityContext,
          volumeMounts: [
            { name: 'home', mountPath: '/home/gpufleet' },
            { name: 'sshd', mountPath: '/run/gpufleet-sshd' },
          ],
        },
      ],
      volumes: [
        { name: 'home', emptyDir: {} },
        { name: 'sshd', emptyDir: { medium: 'Memory' } },
      ],
    },
  });
}

it("runs a GPU instance's Pod: the sshd sidecar as a real sshd on the pod IP, the workload's command, a real ssh login", async () => {
  const key = join(dir, 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'sim', '-f', key]);
  await apply('box', instancePod('box', readFileSync(`${key}.pub`, 'utf8').trim()));
  const ready = await podWhen('box', 'Ready', isReady);
  const ip = ready.status!.podIP!;
  expect(ready.status?.containerStatuses?.map((c) => [c.name, c.ready])).toEqual([
    ['workload', true],
    ['sshd', true],
  ]);
  const user = sim.userOf('default', 'box', 'sshd')!;
  expect(user).toBe(sim.userOf('default', 'box', 'workload'));
  const ssh = spawnSync(
    'ssh',
    ['-F', '/dev/null', '-p', '2222', '-i', key, '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', `${user}@${ip}`, 'echo "$(id -un)|$GPUFLEET_POD|$TEAM"'],
    { encoding: 'utf8', timeout: 20_000 },
  );
  expect(ssh.status).toBe(0);
  expect(ssh.stdout).toBe(`${user}|box|team a\n`);
  // The workload ran with its home volume, a directory of the simulator's.
  const home = join(sim.volumesDir, ready.metadata!.uid!, 'home');
  expect(readFileSync(join(home, 'workload-ran'), 'utf8')).toBe(`${home}\n`);

  expect((await kubectl('delete', 'pod', 'box', '--wait=false')).code).toBe(0);
  await waitFor('the volumes gone', () => (!existsSync(join(sim.volumesDir, ready.metadata!.uid!)) ? true : undefined), WAIT);
  expect(sim.processOf('default', 'box', 'sshd')).toBeUndefined();
});

// The Kubernetes runtime's integration setup: the Kubernetes API simulator with two Ready Nodes
// (gpu-0, gpu-1, 8 device-plugin GPUs each, as the scheduler harness's node records), optionally
// gpufleet's CRDs applied with the real kubectl, and a scheduler with RUNTIME=kubernetes against it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { runKubectl, startKubeApiServer, type KubeApiServer, type KubectlRun } from '@gpufleet/testing';
import { SchedulerHarness } from './scheduler-harness';

const CRDS = resolve(__dirname, '../../../../charts/gpufleet/crds');
export const MANAGED_SELECTOR = 'app.kubernetes.io/managed-by=gpufleet';

export interface KubeRuntimeOptions {
  /** The scheduler's environment besides RUNTIME and KUBECONFIG (KUBE_WORKLOAD_NAMESPACE, …). */
  readonly env?: Record<string, string>;
  /** Apply charts/gpufleet/crds with kubectl before the scheduler starts. */
  readonly crds?: boolean;
}

export class KubeRuntimeHarness {
  private constructor(
    readonly api: KubeApiServer,
    readonly core: CoreV1Api,
    /** A scratch directory (kubectl's cache lives under it), removed by close(). */
    readonly dir: string,
    private readonly env: Record<string, string>,
    private current: SchedulerHarness | undefined,
  ) {}

  static async start(options: KubeRuntimeOptions = {}): Promise<KubeRuntimeHarness> {
    const dir = mkdtempSync(join(tmpdir(), 'gpufleet-kube-runtime-'));
    const api = await startKubeApiServer();
    const kc = new KubeConfig();
    kc.loadFromOptions(api.kubeConfig());
    const env = { RUNTIME: 'kubernetes', KUBECONFIG: api.kubeconfigPath, ...options.env };
    const k = new KubeRuntimeHarness(api, kc.makeApiClient(CoreV1Api), dir, env, undefined);
    try {
      if (options.crds) await k.ok('apply', '--server-side', '-f', CRDS);
      for (const name of ['gpu-0', 'gpu-1']) {
        api.put({ apiVersion: 'v1', kind: 'Node', metadata: { name }, status: { conditions: [{ type: 'Ready', status: 'True' }], allocatable: { 'gpufleet.io/nvidia-gpu': '8' } } });
      }
      await k.startScheduler();
    } catch (err) {
      await k.close();
      throw err;
    }
    return k;
  }

  /** The running scheduler. */
  get h(): SchedulerHarness {
    if (!this.current) throw new Error('no scheduler running');
    return this.current;
  }

  /** A scheduler (with a NATS of its own) against the simulator; the previous one must be stopped. */
  async startScheduler(): Promise<SchedulerHarness> {
    this.current = await SchedulerHarness.start({ env: this.env });
    return this.current;
  }

  /** Stops the scheduler and its NATS, as an uninstalled gpufleet. */
  async stopScheduler(): Promise<void> {
    const h = this.current;
    this.current = undefined;
    await h?.stop();
  }

  kubectl(...args: string[]): Promise<KubectlRun> {
    return runKubectl(this.api.kubeconfigPath, join(this.dir, 'cache'), args);
  }

  /** kubectl's stdout; a non-zero exit throws with its stderr. */
  async ok(...args: string[]): Promise<string> {
    const run = await this.kubectl(...args);
    if (run.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
    return run.stdout;
  }

  /** gpufleet's Pods of a namespace that are not being deleted. */
  async pods(namespace: string): Promise<V1Pod[]> {
    return (await this.core.listNamespacedPod({ namespace, labelSelector: MANAGED_SELECTOR })).items.filter((p) => !p.metadata?.deletionTimestamp);
  }

  async close(): Promise<void> {
    await this.stopScheduler();
    await this.api.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What the kubelet would write once the engine's health probe passes. */
export function running(pod: V1Pod, ip: string): V1Pod {
  const now = new Date().toISOString();
  return {
    ...pod,
    status: {
      phase: 'Running',
      podIP: ip,
      hostIP: '192.168.0.10',
      startTime: now as unknown as Date,
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      containerStatuses: [{ name: 'engine', image: pod.spec!.containers[0].image!, imageID: '', ready: true, started: true, restartCount: 0, containerID: 'containerd://abc', state: { running: { startedAt: now as unknown as Date } } }],
    },
  };
}

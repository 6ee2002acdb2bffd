import type { V1ContainerStatus, V1Pod, V1Service } from '@kubernetes/client-node';
import { context, enginePod, instancePod } from './__fixtures__/pods';
import { podManifestOf } from './pod-manifest';
import { exitText, podStatusOf } from './pod-status';

const NOW = new Date('2026-06-01T10:00:00.000Z');
const STARTED = new Date('2026-06-01T09:59:00.000Z');

function observed(status: V1Pod['status'], base: V1Pod = podManifestOf(enginePod(), context())): V1Pod {
  return { ...base, metadata: { ...base.metadata, uid: 'u-1' }, status };
}

function container(overrides: Partial<V1ContainerStatus>, name = 'engine'): V1ContainerStatus {
  return { name, image: 'x', imageID: '', ready: false, restartCount: 0, containerID: 'containerd://abc', ...overrides };
}

const running = (ready: boolean): V1ContainerStatus => container({ ready, started: true, state: { running: { startedAt: STARTED } } });

describe('podStatusOf', () => {
  it('names the pod from its labels and reports Ready from the Ready condition, with the pod IP and engine port', () => {
    const s = podStatusOf(observed({ phase: 'Running', podIP: '10.1.2.3', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [running(true)] }), { now: NOW })!;
    expect(s).toMatchObject({ node: 'h100-0', namespace: 'team-a', workload: 'llama-s0-bcdfg', podSet: 'server', replica: 0, pod: 0, state: 'Ready', host: '10.1.2.3', port: 8000, restarts: 0, templateHash: 'abc123', message: '', sandbox: 'container containerd' });
    expect(s.startedAt).toEqual(STARTED);
    expect(s.updatedAt).toEqual(NOW);
  });

  it('is Running, waiting for its probe, while the engine is alive but not ready', () => {
    const s = podStatusOf(observed({ phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }], containerStatuses: [running(false)] }), { now: NOW })!;
    expect(s.state).toBe('Running');
    expect(s.message).toBe('alive, waiting for its health probe to pass');
  });

  it('reports CrashLoopBackOff as Backoff with the restarts and the last exit', () => {
    const s = podStatusOf(
      observed({
        phase: 'Running',
        containerStatuses: [container({ restartCount: 4, state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container' } }, lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: STARTED } } })],
      }),
    )!;
    expect(s).toMatchObject({ state: 'Backoff', restarts: 4, lastExit: 'exited with code 1', message: 'CrashLoopBackOff: back-off 40s restarting failed container' });
  });

  it('reports OOMKilled with its exit code', () => {
    const s = podStatusOf(observed({ phase: 'Running', containerStatuses: [container({ restartCount: 1, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 137, reason: 'OOMKilled' } } })] }))!;
    expect(s.lastExit).toBe('OOMKilled: exited with code 137');
  });

  it('reports ImagePullBackOff as Backoff and an invalid image name as Failed', () => {
    expect(podStatusOf(observed({ phase: 'Pending', containerStatuses: [container({ state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "vllm/vllm-openai:v9"' } } })] }))!).toMatchObject({
      state: 'Backoff',
      message: 'ImagePullBackOff: Back-off pulling image "vllm/vllm-openai:v9"',
    });
    expect(podStatusOf(observed({ phase: 'Pending', containerStatuses: [container({ state: { waiting: { reason: 'InvalidImageName', message: 'bad ref' } } })] }))!.state).toBe('Failed');
  });

  it('reports a missing Secret as SECRET_NOT_FOUND, as the process runtime does', () => {
    const s = podStatusOf(observed({ phase: 'Pending', containerStatuses: [container({ state: { waiting: { reason: 'CreateContainerConfigError', message: 'secret "hf-token" not found' } } })] }))!;
    expect(s).toMatchObject({ state: 'Failed', message: 'SECRET_NOT_FOUND: secret "hf-token" not found' });
  });

  it('reports an evicted pod Failed with the kubelet reason and message', () => {
    const s = podStatusOf(observed({ phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' }))!;
    expect(s).toMatchObject({ state: 'Failed', message: 'Evicted: The node was low on resource: memory.' });
  });

  it('reports an unschedulable pod Failed with the scheduler message', () => {
    const s = podStatusOf(observed({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available: insufficient gpufleet.io/nvidia-gpu' }] }))!;
    expect(s).toMatchObject({ state: 'Failed', message: 'Unschedulable: 0/3 nodes are available: insufficient gpufleet.io/nvidia-gpu' });
  });

  it('reports a terminating pod as Stopping, whatever its containers say', () => {
    const base = podManifestOf(enginePod(), context());
    const pod: V1Pod = { ...base, metadata: { ...base.metadata, deletionTimestamp: '2026-06-01T10:00:00Z' as unknown as Date }, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } };
    expect(podStatusOf(pod)).toMatchObject({ state: 'Stopping', message: 'terminating: deletion requested at 2026-06-01T10:00:00.000Z' });
  });

  it('is Starting while the kubelet creates the containers', () => {
    expect(podStatusOf(observed({ phase: 'Pending' }))!.state).toBe('Starting');
    expect(podStatusOf(observed({ phase: 'Pending', containerStatuses: [container({ state: { waiting: { reason: 'ContainerCreating' } } })] }))!).toMatchObject({ state: 'Starting', message: '' });
  });

  it('gives an instance the state of its least healthy container, named, and the node port of its SSH Service', () => {
    const base = podManifestOf(instancePod(), context());
    const pod = observed(
      {
        phase: 'Running',
        podIP: '10.1.2.4',
        hostIP: '192.168.0.10',
        containerStatuses: [container({ ready: true, state: { running: {} } }, 'workload'), container({ restartCount: 2, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 255 } } }, 'sshd')],
      },
      base,
    );
    const service: V1Service = { spec: { type: 'NodePort', ports: [{ name: 'ssh', port: 22, nodePort: 31022 }] } };
    expect(podStatusOf(pod, { service })).toMatchObject({ state: 'Backoff', message: 'sshd: CrashLoopBackOff', lastExit: 'sshd: exited with code 255', restarts: 2, host: '192.168.0.10', port: 31022, sshUser: 'gpufleet' });
    expect(podStatusOf(pod)).toMatchObject({ host: '10.1.2.4', port: 2222 });
  });

  it("gives an instance a LoadBalancer's ingress and port, its node port until the load balancer is there, the Pod's address for ClusterIP", () => {
    const pod = observed({ phase: 'Running', podIP: '10.1.2.4', hostIP: '192.168.0.10', containerStatuses: [] }, podManifestOf(instancePod(), context()));
    const lb = (ingress: object[] = []): V1Service => ({ spec: { type: 'LoadBalancer', ports: [{ name: 'ssh', port: 22, nodePort: 30007 }] }, status: { loadBalancer: { ingress } } });
    expect(podStatusOf(pod, { service: lb([{ ip: '203.0.113.7' }]) })).toMatchObject({ host: '203.0.113.7', port: 22 });
    expect(podStatusOf(pod, { service: lb([{ hostname: 'ssh.example.com' }]) })).toMatchObject({ host: 'ssh.example.com', port: 22 });
    expect(podStatusOf(pod, { service: lb() })).toMatchObject({ host: '192.168.0.10', port: 30007 });
    expect(podStatusOf(pod, { service: { spec: { type: 'NodePort', ports: [{ name: 'ssh', port: 22 }] } } })).toMatchObject({ host: '10.1.2.4', port: 2222 });
    expect(podStatusOf(pod, { service: { spec: { type: 'ClusterIP', ports: [{ name: 'ssh', port: 22 }] } } })).toMatchObject({ host: '10.1.2.4', port: 2222 });
    // An engine Pod never takes an SSH Service's address.
    const engine = observed({ phase: 'Running', podIP: '10.1.2.5', containerStatuses: [] }, podManifestOf(enginePod(), context()));
    expect(podStatusOf(engine, { service: lb([{ ip: '203.0.113.7' }]) })).toMatchObject({ host: '10.1.2.5', port: 8000 });
  });

  it('ignores pods gpufleet did not make', () => {
    expect(podStatusOf({ metadata: { name: 'nginx', labels: { app: 'nginx' } } })).toBeUndefined();
  });

  it('words exits as the process runtime does', () => {
    expect(exitText({ exitCode: 0, reason: 'Completed' })).toBe('exited with code 0');
    expect(exitText({ exitCode: 137, signal: 9 })).toBe('killed by signal 9');
    expect(exitText({ exitCode: 2, reason: 'ContainerCannotRun', message: 'exec: "vllm": not found' })).toBe('ContainerCannotRun: exited with code 2: exec: "vllm": not found');
  });
});

import { GPUInstance, GPUInstanceSpec, InstancePhase, type PodRuntimeStatus, type Workload } from '@gpufleet/contracts';
import { instanceWorkloadSpec, planInstance, validateInstanceSpec } from './instance';
import type { NodeView } from './replica-state';
import { admitted, context, H100_POOL, pod } from './__fixtures__/records';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq0Vw9kq9Hq2h9b2m3XjW1u0y8yKzv7o5iJ9n0xQk1a user@laptop';
const NOW = 5_000_000;

function spec(overrides: Partial<GPUInstanceSpec> = {}): GPUInstanceSpec {
  return GPUInstanceSpec.fromPartial({ name: 'dev-box', namespace: 'team-a', localQueue: 'default', instanceType: `${H100_POOL}.1x`, sshPublicKeys: [KEY], ...overrides });
}

function plan(instance: GPUInstance, workloads: Workload[] = [], pods: PodRuntimeStatus[] = [], nodes: Record<string, NodeView> = {}) {
  return planInstance({ instance, workloads, podsOf: (w) => pods.filter((p) => p.workload === w), nodeOf: (n) => nodes[n] ?? { ready: true }, now: NOW, rescheduleAfterMs: 300_000 });
}

const resources = context.resolveInstanceType(`${H100_POOL}.1x`)!.resources;

describe('GPU instances', () => {
  it('accepts an instance with a key and an InstanceType of the queue’s pool', () => {
    expect(validateInstanceSpec(spec(), context)).toEqual([]);
  });

  it('refuses an instance without keys, with a malformed key, or setting device variables', () => {
    const problems = validateInstanceSpec(spec({ sshPublicKeys: [], env: { CUDA_VISIBLE_DEVICES: '0' } }), context).map((p) => p.field);
    expect(problems).toEqual(['sshPublicKeys', 'env.CUDA_VISIBLE_DEVICES']);
    expect(validateInstanceSpec(spec({ sshPublicKeys: ['command="x" ssh-ed25519 AAAA'] }), context).map((p) => p.field)).toEqual(['sshPublicKeys[0]']);
  });

  it('bounds the environment and labels an instance carries to its node', () => {
    const env = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`V${i}`, 'x'.repeat(30 * 1024)]));
    expect(validateInstanceSpec(spec({ env, labels: { 'gpufleet.io/deployment': 'qwen' } }), context).map((p) => p.message)).toEqual([
      'labels["gpufleet.io/deployment"]: expected no "gpufleet.io/" key: gpufleet sets those itself, got "qwen"',
      'env: expected at most 256 KiB of names and values in all, got 301 KiB',
    ]);
  });

  it('creates a workload carrying the keys and environment, labelled with the instance', () => {
    const w = instanceWorkloadSpec(spec({ env: { FOO: 'bar' } }), resources, 'qwert');
    expect(w.name).toBe('dev-box-qwert');
    expect(w.labels['gpufleet.io/instance']).toBe('dev-box');
    expect(w.template?.instance).toEqual({ instance: 'dev-box', sshPublicKeys: [KEY], env: { FOO: 'bar' }, envFromSecret: {}, command: '' });
  });

  it('asks for a workload when it has none, and reports Running with the SSH endpoint once sshd is Ready', () => {
    const instance = GPUInstance.fromPartial({ spec: spec(), generation: 1 });
    expect(plan(instance)).toMatchObject({ create: true, delete: [] });
    const w = admitted(instanceWorkloadSpec(spec(), resources, 'qwert'), 'h100-1', ['nvidia-2']);
    const ready = plan(instance, [w], [pod(w, 'Ready', 42_022, { sshUser: 'root', sshHostKey: 'ssh-ed25519 AAAAhost', devicesEnv: { CUDA_VISIBLE_DEVICES: '2' } })]);
    expect(ready.create).toBe(false);
    expect(ready.status).toMatchObject({
      phase: InstancePhase.INSTANCE_PHASE_RUNNING,
      node: 'h100-1',
      sshHost: '127.0.0.1',
      sshPort: 42_022,
      sshUser: 'root',
      devicesEnv: { CUDA_VISIBLE_DEVICES: '2' },
      acceleratorIds: ['nvidia-2'],
    });
  });

  it('releases the devices of a stopped instance and keeps the record', () => {
    const w = admitted(instanceWorkloadSpec(spec(), resources, 'qwert'), 'h100-1');
    const stopped = plan(GPUInstance.fromPartial({ spec: spec({ stop: true }) }), [w]);
    expect(stopped.delete.map((d) => d.workload)).toEqual(['dev-box-qwert']);
    expect(stopped.removeRecord).toBe(false);
    expect(plan(GPUInstance.fromPartial({ spec: spec({ stop: true }) })).status.phase).toBe(InstancePhase.INSTANCE_PHASE_STOPPED);
  });

  it('moves an instance off a node NotReady for longer than the timeout', () => {
    const w = admitted(instanceWorkloadSpec(spec(), resources, 'qwert'), 'h100-1');
    const moved = plan(GPUInstance.fromPartial({ spec: spec() }), [w], [], { 'h100-1': { ready: false, since: new Date(NOW - 300_000) } });
    expect(moved.delete.map((d) => d.workload)).toEqual(['dev-box-qwert']);
    expect(moved.create).toBe(true);
    expect(moved.status.message).toMatch(/a new instance \(empty working directory\) is being placed/);
  });

  it('removes the record of a deleted instance once its workload is gone', () => {
    const deleting = GPUInstance.fromPartial({ spec: spec(), deletionRequestedAt: new Date(NOW) });
    expect(plan(deleting).removeRecord).toBe(true);
  });
});

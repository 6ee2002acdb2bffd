import { DeploymentPhase, InstancePhase, InstanceType, ModelDeployment, GPUInstance } from '@gpufleet/contracts';
import type { DeploymentValidationContext } from '@gpufleet/deployments-core';
import { gpuInstanceResourceOf, gpuInstanceSpecOf, setInstanceStoppedRequestOf, type GPUInstanceResource } from './gpu-instance';
import { instanceTypeOf, instanceTypeResourceOf, type InstanceTypeResource } from './instance-type';
import { createDeploymentRequestOf, deleteDeploymentRequestOf, modelDeploymentResourceOf, modelDeploymentSpecOf, type ModelDeploymentResource } from './model-deployment';
import { CRD_NAMES, PRINTER_COLUMNS } from './printer-columns';

const CTX: DeploymentValidationContext = {
  resolveLocalQueue: (_ns, _q, pool) => ({ ok: true, pool: pool ?? 'h100-80gb-hbm3-x86-64' }),
  resolveInstanceType: (name) =>
    name === 'h100-80gb-hbm3-x86-64.1x' ? { pool: 'h100-80gb-hbm3-x86-64', resources: { accelerator: { whole: 1 }, vcpu: 16, memoryMib: 131072 }, acceleratorMemoryMib: 81559 } : undefined,
};

function deployment(spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): ModelDeploymentResource {
  return {
    apiVersion: 'gpufleet.io/v1',
    kind: 'ModelDeployment',
    metadata: { name: 'llama', namespace: 'team-a', ...metadata },
    spec: { model: '/models/llama-3.1-8b', engine: { engine: 'vllm', envFromSecret: { HF_TOKEN: { name: 'hf-token', key: 'token' } } }, roles: [{ role: 'server', replicas: 2, instanceType: 'h100-80gb-hbm3-x86-64.1x' }], ...spec },
  };
}

const messages = (r: { ok: boolean; problems?: readonly { message: string }[] }): string[] => (r.ok ? [] : r.problems!.map((p) => p.message));

describe('ModelDeployment resources', () => {
  it('become a CreateDeploymentRequest with name and namespace from the metadata', () => {
    const r = createDeploymentRequestOf(deployment(), CTX);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.spec).toMatchObject({ name: 'llama', namespace: 'team-a', model: '/models/llama-3.1-8b', roles: [{ role: 'server', replicas: 2, instanceType: 'h100-80gb-hbm3-x86-64.1x' }] });
    expect(r.value.spec!.engine!.envFromSecret).toEqual({ HF_TOKEN: { name: 'hf-token', key: 'token' } });
    expect(deleteDeploymentRequestOf(deployment())).toEqual({ namespace: 'team-a', name: 'llama' });
  });

  it('name a field of the wrong type, an unknown field and two accelerator modes by their paths', () => {
    const r = modelDeploymentSpecOf(deployment({ roles: [{ role: 'server', replicas: '3', resources: { accelerator: { whole: 1, sharedTokens: 5 } } }], replicaz: 1 }));
    expect(r.ok).toBe(false);
    expect(messages(r)).toEqual([
      'spec.roles[0].replicas: expected an integer from 0 to 4294967295, got "3"',
      'spec.roles[0].resources.accelerator: expected exactly one of whole, sharedTokens, slice, partitionProfile, got whole and sharedTokens',
      expect.stringMatching(/^spec\.replicaz: expected one of the fields localQueue, priority, model, .*got an unknown field$/),
    ]);
    if (!r.ok) expect(r.message).toMatch(/^INVALID_ARGUMENT: spec\.roles\[0\]\.replicas: expected/);
  });

  it("run deployments-core's validator, its fields under spec. and metadata.", () => {
    const r = modelDeploymentSpecOf(deployment({ roles: [{ role: 'server', replicas: 300, instanceType: 'h100-80gb-hbm3-x86-64.1x' }] }, { name: 'Llama' }), CTX);
    expect(messages(r)).toEqual(expect.arrayContaining([expect.stringMatching(/^metadata\.name: expected a DNS-1123 label/), expect.stringMatching(/^spec\.roles\[0\]\.replicas: expected an integer from 0 to 256/)]));
  });

  it('report the engine refusals of the presets', () => {
    const r = modelDeploymentSpecOf(deployment({ engine: { engine: 'vllm', extraArgs: ['--tensor-parallel-size', '8'] } }), CTX);
    expect(messages(r).join('\n')).toMatch(/spec\.engine\.extraArgs\[0\]/);
  });

  it('leave what needs the cluster to the gRPC call when no context is given', () => {
    expect(modelDeploymentSpecOf(deployment({ roles: [{ role: 'server', replicas: 1, instanceType: 'unknown.1x' }] })).ok).toBe(true);
    expect(messages(modelDeploymentSpecOf(deployment({ roles: [{ role: 'server', replicas: 1, instanceType: 'unknown.1x' }] }), CTX))).toEqual([expect.stringMatching(/^spec\.roles\[0\]\.instanceType: expected an InstanceType of the cluster/)]);
  });

  it('refuse another kind, apiVersion or a missing namespace', () => {
    const r = modelDeploymentSpecOf({ ...deployment(), apiVersion: 'gpufleet.io/v2', metadata: { name: 'llama' } });
    expect(messages(r)).toEqual(['apiVersion: expected gpufleet.io/v1, got "gpufleet.io/v2"', 'metadata.namespace: expected a namespace (the kind is namespaced), got none']);
  });

  it('come back from a gRPC ModelDeployment with spec and status, and round-trip', () => {
    const converted = createDeploymentRequestOf(deployment(), CTX);
    if (!converted.ok) throw new Error(converted.message);
    const md = ModelDeployment.fromPartial({
      spec: converted.value.spec,
      uid: 'rec-1',
      generation: 3,
      status: { phase: DeploymentPhase.DEPLOYMENT_PHASE_READY, desiredReplicas: 2, readyReplicas: 2, updatedReplicas: 2, endpoints: ['http://10.0.0.5:8000'], conditions: [{ type: 'Available', status: true, reason: '', message: 'ok', lastTransition: new Date('2026-06-01T10:00:00Z') }] },
    });
    const resource = modelDeploymentResourceOf(md, { observedGeneration: 7, metadata: { uid: 'k8s-1', name: 'ignored' } });
    expect(resource.metadata).toEqual({ uid: 'k8s-1', name: 'llama', namespace: 'team-a' });
    expect(resource.spec).not.toHaveProperty('name');
    expect(resource.status).toMatchObject({ phase: 'Ready', readyReplicas: 2, observedGeneration: 7, recordUid: 'rec-1', recordGeneration: 3, conditions: [{ type: 'Available', status: 'True', reason: 'Available', message: 'ok', lastTransitionTime: '2026-06-01T10:00:00.000Z' }] });
    const again = modelDeploymentSpecOf(resource, CTX);
    expect(again.ok && again.value).toEqual(converted.value.spec);
  });
});

describe('GPUInstance resources', () => {
  const instance = (spec: Record<string, unknown> = {}): GPUInstanceResource => ({
    apiVersion: 'gpufleet.io/v1',
    kind: 'GPUInstance',
    metadata: { name: 'dev-box', namespace: 'team-a' },
    spec: { instanceType: 'h100-80gb-hbm3-x86-64.1x', sshPublicKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4 alice@laptop'], image: 'pytorch/pytorch:2.4.0', ...spec },
  });

  it('become a GPUInstanceSpec, and spec.stop a SetInstanceStopped call', () => {
    const r = gpuInstanceSpecOf(instance(), CTX);
    expect(r.ok && r.value).toMatchObject({ name: 'dev-box', namespace: 'team-a', image: 'pytorch/pytorch:2.4.0', stop: false });
    expect(setInstanceStoppedRequestOf(instance({ stop: true }))).toEqual({ namespace: 'team-a', name: 'dev-box', stop: true });
  });

  it('name their problems by field', () => {
    expect(messages(gpuInstanceSpecOf(instance({ sshPublicKeys: 'ssh-ed25519 AAAA', stop: 'yes' })))).toEqual(['spec.sshPublicKeys: expected a list, got "ssh-ed25519 AAAA"', 'spec.stop: expected true or false, got "yes"']);
    expect(messages(gpuInstanceSpecOf(instance({ sshPublicKeys: [], env: { CUDA_VISIBLE_DEVICES: '0' } }), CTX))).toEqual([
      expect.stringMatching(/^spec\.sshPublicKeys: expected at least one OpenSSH public key/),
      expect.stringMatching(/^spec\.env\.CUDA_VISIBLE_DEVICES: expected not set/),
    ]);
  });

  it('come back with the SSH endpoint in the status', () => {
    const r = gpuInstanceSpecOf(instance(), CTX);
    if (!r.ok) throw new Error(r.message);
    const resource = gpuInstanceResourceOf(GPUInstance.fromPartial({ spec: r.value, uid: 'rec-2', status: { phase: InstancePhase.INSTANCE_PHASE_RUNNING, sshHost: '192.168.0.10', sshPort: 31022, sshUser: 'gpufleet' } }));
    expect(resource.status).toMatchObject({ phase: 'Running', sshHost: '192.168.0.10', sshPort: 31022, recordUid: 'rec-2' });
    const again = gpuInstanceSpecOf(resource, CTX);
    expect(again.ok && again.value).toEqual(r.value);
  });
});

describe('InstanceType resources', () => {
  const it1 = InstanceType.fromPartial({
    name: 'h100-80gb-hbm3-x86-64.4x',
    pool: 'h100-80gb-hbm3-x86-64',
    acceleratorProduct: 'NVIDIA H100 80GB HBM3',
    unit: { accelerators: 4, vcpu: 48, memoryMib: 524288, acceleratorMemoryMib: 81559 },
    creditPrice: 6400000,
    readyNodes: 2,
    revision: 9,
    capacity: { whole: { onceMaxRequest: 2, remaining: 3, capacity: 4 } },
  });

  it('round-trip through a cluster-scoped resource', () => {
    const resource = instanceTypeResourceOf(it1);
    expect(resource.metadata.name).toBe('h100-80gb-hbm3-x86-64.4x');
    expect(resource.spec.unit).toMatchObject({ accelerators: 4, vcpu: 48 });
    const back = instanceTypeOf(resource);
    expect(back.ok && back.value).toEqual(it1);
  });

  it('refuse a namespace, a bad name and a unit of the wrong type', () => {
    const bad: InstanceTypeResource = { ...instanceTypeResourceOf(it1), metadata: { name: 'H100_4x', namespace: 'team-a' } };
    bad.spec = { ...bad.spec, unit: { accelerators: -1 } };
    expect(messages(instanceTypeOf(bad))).toEqual([
      'spec.unit.accelerators: expected an integer from 0 to 4294967295, got -1',
      expect.stringMatching(/^metadata\.name: expected a DNS-1123 subdomain/),
      'metadata.namespace: expected none (InstanceType is cluster-scoped), got "team-a"',
    ]);
  });
});

describe('PRINTER_COLUMNS', () => {
  it('point every kind at fields its resources have', () => {
    const md = modelDeploymentResourceOf(ModelDeployment.fromPartial({ spec: { name: 'a', namespace: 'b', model: 'm', localQueue: 'default', engine: { engine: 'vllm' } }, status: { phase: DeploymentPhase.DEPLOYMENT_PHASE_READY, desiredReplicas: 1 } }));
    const lookup = (obj: unknown, path: string): unknown => path.split('.').slice(1).reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], obj);
    // Array paths (`[0]`, `[*]`) and fields a new deployment leaves empty are not looked up here.
    const simple = (c: { jsonPath: string; name: string }) => !c.jsonPath.startsWith('.metadata') && !c.jsonPath.includes('[') && !['Ready', 'Served-Name'].includes(c.name);
    for (const c of PRINTER_COLUMNS.ModelDeployment) if (simple(c)) expect([c.name, lookup(md, c.jsonPath)]).toEqual([c.name, expect.anything()]);
    const it = instanceTypeResourceOf(InstanceType.fromPartial({ name: 'x.1x', pool: 'x', acceleratorProduct: 'p', unit: { accelerators: 1, vcpu: 1, memoryMib: 1 }, creditPrice: 1, readyNodes: 1, capacity: { whole: { remaining: 1 } } }));
    for (const c of PRINTER_COLUMNS.InstanceType) if (simple(c) && !['Whole-Max', 'Shared', 'Sliced-MiB'].includes(c.name)) expect([c.name, lookup(it, c.jsonPath)]).toEqual([c.name, expect.anything()]);
    expect(Object.keys(CRD_NAMES)).toEqual(Object.keys(PRINTER_COLUMNS));
  });
});

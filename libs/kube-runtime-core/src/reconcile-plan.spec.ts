import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { context, enginePod, instancePod } from './__fixtures__/pods';
import { desiredObjects } from './desired';
import { podManifestOf } from './pod-manifest';
import { reconcilePlan } from './reconcile-plan';
import { deploymentServiceOf } from './services';

const pod = (replica: number, overrides: Parameters<typeof enginePod>[0] = {}): V1Pod => podManifestOf(enginePod({ ...overrides, ref: { workload: `llama-s${replica}-bcdfg`, replica: 0, ...overrides.ref } }), context());
const live = <T extends V1Pod | V1Service>(o: T, extra: Partial<NonNullable<T['metadata']>> = {}, status?: V1Pod['status']): T => ({ ...o, metadata: { ...o.metadata, uid: `uid-${o.metadata!.name}`, ...extra }, ...(status ? { status } : {}) });
const service = deploymentServiceOf({ namespace: 'team-a', name: 'llama', uid: 'uid-llama' });

describe('reconcilePlan', () => {
  it('applies what does not exist and leaves alone what is unchanged', () => {
    const plan = reconcilePlan({ pods: [pod(0), pod(1)], services: [service] }, { pods: [live(pod(0))], services: [live(service)] });
    expect(plan.apply.pods.map((p) => p.metadata!.name)).toEqual(['llama-s1-bcdfg-server-0-0']);
    expect(plan.apply.services).toEqual([]);
    expect(plan.delete).toEqual([]);
  });

  it('deletes pods of a scale down', () => {
    const plan = reconcilePlan({ pods: [pod(0)], services: [service] }, { pods: [live(pod(0)), live(pod(1))], services: [live(service)] });
    expect(plan.delete).toEqual([{ ref: { kind: 'Pod', namespace: 'team-a', name: 'llama-s1-bcdfg-server-0-0', uid: 'uid-llama-s1-bcdfg-server-0-0' }, reason: 'NotDesired' }]);
  });

  it('replaces a pod whose spec hash changed: deleted now, applied once it is gone', () => {
    const changed = pod(0, { run: { templateHash: 'new' } });
    const first = reconcilePlan({ pods: [changed], services: [] }, { pods: [live(pod(0))], services: [] });
    expect(first.delete.map((d) => d.reason)).toEqual(['SpecChanged']);
    expect(first.apply.pods).toEqual([]);
    expect(first.wait[0].message).toMatch(/being replaced \(its spec changed\)/);
    const second = reconcilePlan({ pods: [changed], services: [] }, { pods: [live(pod(0), { deletionTimestamp: new Date() })], services: [] });
    expect(second.delete).toEqual([]);
    expect(second.wait[0].message).toMatch(/is terminating/);
    expect(reconcilePlan({ pods: [changed], services: [] }, { pods: [], services: [] }).apply.pods).toEqual([changed]);
  });

  it('replaces a pod that failed (evicted), which never restarts by itself', () => {
    const plan = reconcilePlan({ pods: [pod(0)], services: [] }, { pods: [live(pod(0), {}, { phase: 'Failed', reason: 'Evicted' })], services: [] });
    expect(plan.delete.map((d) => d.reason)).toEqual(['PodFailed']);
  });

  it('updates a running Pod in place, never replacing it, when only its devices annotation or owner references changed', () => {
    const corrected = pod(0, { placement: { acceleratorIds: ['nvidia-0', 'nvidia-3'] } });
    const devices = reconcilePlan({ pods: [corrected], services: [] }, { pods: [live(pod(0))], services: [] });
    expect(devices.delete).toEqual([]);
    expect(devices.apply.pods).toEqual([corrected]);
    const owner = { kind: 'ModelDeployment' as const, name: 'llama', uid: 'cr-uid' };
    const owned = podManifestOf({ ...enginePod({ ref: { workload: 'llama-s0-bcdfg', replica: 0 } }), owner }, context());
    const adopted = reconcilePlan({ pods: [owned], services: [] }, { pods: [live(pod(0))], services: [] });
    expect(adopted.delete).toEqual([]);
    expect(adopted.apply.pods[0].metadata!.ownerReferences).toEqual([{ apiVersion: 'gpufleet.io/v1', kind: 'ModelDeployment', name: 'llama', uid: 'cr-uid', controller: true, blockOwnerDeletion: true }]);
    expect(reconcilePlan({ pods: [owned], services: [] }, { pods: [live(owned)], services: [] }).apply.pods).toEqual([]);
    const ownedService = deploymentServiceOf({ namespace: 'team-a', name: 'llama', uid: 'uid-llama', owner });
    expect(reconcilePlan({ pods: [], services: [ownedService] }, { pods: [], services: [live(service)] }).apply.services).toEqual([ownedService]);
  });

  it('updates a changed Service in place', () => {
    const moved = deploymentServiceOf({ namespace: 'team-a', name: 'llama', uid: 'uid-llama', port: 80 });
    const plan = reconcilePlan({ pods: [], services: [moved] }, { pods: [], services: [live(service)] });
    expect(plan.apply.services).toEqual([moved]);
    expect(plan.delete).toEqual([]);
  });

  it('never touches objects without the managed-by label: no delete, and a conflict for a desired name', () => {
    const foreignPod: V1Pod = { metadata: { name: 'nginx', namespace: 'team-a', uid: 'n1', labels: { app: 'nginx' } } };
    const foreignService: V1Service = { metadata: { name: 'llama', namespace: 'team-a', uid: 's1', labels: { app: 'mine' } } };
    const plan = reconcilePlan({ pods: [], services: [service] }, { pods: [foreignPod], services: [foreignService] });
    expect(plan.delete).toEqual([]);
    expect(plan.apply.services).toEqual([]);
    expect(plan.conflicts).toHaveLength(1);
    expect(plan.conflicts[0].message).toMatch(/Service team-a\/llama exists but is not managed by gpufleet/);
  });

  it('deletes managed objects that are no longer desired, but not those already terminating', () => {
    const plan = reconcilePlan({ pods: [], services: [] }, { pods: [live(pod(0)), live(pod(1), { deletionTimestamp: new Date() })], services: [live(service)] });
    expect(plan.delete.map((d) => `${d.ref.kind}/${d.ref.name}`)).toEqual(['Pod/llama-s0-bcdfg-server-0-0', 'Service/llama']);
  });

  it('has nothing to do once what it planned exists: applying is idempotent', () => {
    const desired = desiredObjects({ pods: [enginePod(), instancePod()], deployments: [{ namespace: 'team-a', name: 'llama', uid: 'uid-llama' }] }, context());
    const first = reconcilePlan(desired, { pods: [], services: [] });
    expect(first.apply.pods).toHaveLength(2);
    expect(first.apply.services).toHaveLength(2);
    // What the API server answers adds uids, status and defaulted fields; the spec hash stays.
    const observed = {
      pods: first.apply.pods.map((p) => live(p, {}, { phase: 'Running' })),
      services: first.apply.services.map((s) => ({ ...live(s), spec: { ...s.spec, clusterIP: '10.96.0.10', sessionAffinity: 'None' } })),
    };
    expect(reconcilePlan(desired, observed)).toEqual({ apply: { pods: [], services: [] }, delete: [], wait: [], conflicts: [] });
  });
});

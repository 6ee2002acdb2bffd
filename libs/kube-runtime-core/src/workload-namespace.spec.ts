import { context, enginePod } from './__fixtures__/pods';
import { desiredObjects } from './desired';
import { specHashOf, withSpecHash } from './hash';
import { KubeLabels } from './names';
import { podStatusOf } from './pod-status';
import { inWorkloadNamespace, samePodStatus } from './workload-namespace';

describe('inWorkloadNamespace', () => {
  const objects = () =>
    desiredObjects({ pods: [enginePod()], deployments: [{ namespace: 'team-a', name: 'llama', uid: 'uid-llama', owner: { kind: 'ModelDeployment', name: 'llama', uid: 'k1' } }] }, context());

  it('leaves objects alone with "*" or in their own namespace', () => {
    const { pods, services } = objects();
    expect(inWorkloadNamespace(pods[0], '*')).toBe(pods[0]);
    expect(inWorkloadNamespace(services[0], 'team-a')).toBe(services[0]);
  });

  it('moves objects into the shared namespace under a prefixed name, without owners, with a fresh spec hash', () => {
    const { pods, services } = objects();
    const pod = inWorkloadNamespace(pods[0], 'gpufleet');
    expect(pod.metadata).toMatchObject({ namespace: 'gpufleet', name: `team-a-${pods[0].metadata!.name}` });
    expect(pod.metadata!.labels![KubeLabels.namespace]).toBe('team-a');
    expect(specHashOf(pod)).not.toBe(specHashOf(pods[0]));
    expect(specHashOf(withSpecHash(pod))).toBe(specHashOf(pod));
    const service = inWorkloadNamespace(services[0], 'gpufleet');
    expect(service.metadata).toMatchObject({ namespace: 'gpufleet', name: 'team-a-llama' });
    expect(service.metadata!.ownerReferences).toBeUndefined();
    expect(service.spec!.selector).toMatchObject({ [KubeLabels.namespace]: 'team-a', [KubeLabels.deployment]: 'llama' });
    expect(services[0].spec!.selector![KubeLabels.namespace]).toBeUndefined();
    expect(inWorkloadNamespace(services[0], 'gpufleet')).toEqual(service);
  });
});

describe('samePodStatus', () => {
  it('ignores updated_at only', () => {
    const pod = inWorkloadNamespace(objects()[0], 'gpufleet');
    const a = podStatusOf(pod, { now: new Date(1) })!;
    const b = podStatusOf(pod, { now: new Date(2) })!;
    expect(samePodStatus(a, b)).toBe(true);
    expect(samePodStatus(a, { ...b, state: 'Ready' })).toBe(false);
    expect(samePodStatus(a, undefined)).toBe(false);
    expect(samePodStatus(undefined, undefined)).toBe(true);
  });

  function objects() {
    return desiredObjects({ pods: [enginePod()] }, context()).pods;
  }
});

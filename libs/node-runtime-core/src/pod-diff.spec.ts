import type { DesiredPod } from './desired-pods';
import { diffPods } from './pod-diff';
import type { FailedPodPlan, PodPlan, RunnablePodPlan } from './pod-plan';

const plan = (key: string, launch: string): RunnablePodPlan => ({ kind: 'engine', key, launch } as unknown as RunnablePodPlan);
const failed = (key: string): FailedPodPlan => ({ kind: 'failed', key, message: 'X: y', pod: {} as DesiredPod, port: 0, templateHash: '', devicesEnv: {} });

describe('diffPods', () => {
  it('starts what is desired and not running, stops what runs and is not desired', () => {
    const changes = diffPods([plan('a', 'l1'), plan('b', 'l1')], [{ key: 'b', launch: 'l1' }, { key: 'c', launch: 'l1' }]);
    expect(changes.start.map((p) => p.key)).toEqual(['a']);
    expect(changes.stop).toEqual(['c']);
    expect(changes.replace).toEqual([]);
  });

  it('replaces a pod whose launch changed (a new template)', () => {
    const changes = diffPods([plan('a', 'l2')], [{ key: 'a', launch: 'l1' }]);
    expect(changes.replace.map((p) => p.key)).toEqual(['a']);
    expect(changes.start).toEqual([]);
  });

  it('reports failed plans, and starts a pod once its plan no longer fails', () => {
    const plans: PodPlan[] = [failed('a')];
    expect(diffPods(plans, [{ key: 'a', launch: 'l1' }]).fail.map((p) => p.key)).toEqual(['a']);
    expect(diffPods([plan('a', 'l1')], [{ key: 'a', launch: undefined }]).start.map((p) => p.key)).toEqual(['a']);
  });

  it('stops a failed pod for good once it is no longer desired, and does nothing when all is in step', () => {
    expect(diffPods([], [{ key: 'a', launch: undefined }]).stop).toEqual(['a']);
    expect(diffPods([plan('a', 'l1')], [{ key: 'a', launch: 'l1' }])).toEqual({ start: [], replace: [], stop: [], fail: [] });
  });
});

import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { PodPlanError, type WeightsCopy } from '@gpufleet/node-runtime-core';
import { context, enginePod } from './__fixtures__/pods';
import { desiredObjects, failedManifestStatusOf } from './desired';
import { KubeAnnotations } from './names';
import { podManifestOf, type NodeWeightsLookup } from './pod-manifest';
import { reconcilePlan } from './reconcile-plan';
import { workloadNamespaceName } from './workload-namespace';

const CACHE = '/var/lib/gpufleet/model-cache/h100-0';
const SNAPSHOT = `${CACHE}/hf/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/a1b2c3`;
const copy = (extra: Partial<WeightsCopy>): WeightsCopy => ({ state: 'Ready', percent: 100, bytesDone: 10, bytesTotal: 10, reason: '', message: '', path: SNAPSHOT, ...extra });
/** Copies keyed "<node>.<namespace>.<artifact>", as the artifact-nodes bucket holds them. */
const weights = (copies: Record<string, WeightsCopy>): NodeWeightsLookup => ({ copyOf: (node, ns, name) => copies[`${node}.${ns}.${name}`] });
const artifactPod = (servedModelName = '') => enginePod({ run: { artifact: 'qwen', model: '', servedModelName } });
const env = (c: V1Container): Record<string, unknown> => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));

function planError(fn: () => unknown): PodPlanError {
  try {
    fn();
  } catch (err) {
    if (err instanceof PodPlanError) return err;
    throw err;
  }
  throw new Error('expected a PodPlanError');
}

describe('podManifestOf: an engine pod naming a ModelArtifact', () => {
  it('is not made while its node has no copy, or while the copy downloads, saying how far it is', () => {
    expect(planError(() => podManifestOf(artifactPod(), context())).message).toBe("WEIGHTS_PENDING: waiting for weights: this node's cache has no copy of artifact team-a/qwen yet");
    // Another node's Ready copy is no use to this pod.
    const elsewhere = weights({ 'h100-1.team-a.qwen': copy({}) });
    expect(planError(() => podManifestOf(artifactPod(), context({ weights: elsewhere }))).reason).toBe('WEIGHTS_PENDING');
    const downloading = weights({ 'h100-0.team-a.qwen': copy({ state: 'Downloading', percent: 45.7, bytesDone: 457, bytesTotal: 1000, path: '' }) });
    expect(planError(() => podManifestOf(artifactPod(), context({ weights: downloading }))).message).toBe(
      'WEIGHTS_PENDING: waiting for weights: Downloading 45% (457 of 1000 bytes) (artifact team-a/qwen)',
    );
  });

  it('fails with the cache’s reason when the copy is Failed', () => {
    const failed = weights({ 'h100-0.team-a.qwen': copy({ state: 'Failed', reason: 'InsufficientCapacity', message: 'needs 16 GiB, 3 GiB free', path: '' }) });
    const err = planError(() => podManifestOf(artifactPod(), context({ weights: failed })));
    expect(err.reason).toBe('WEIGHTS_FAILED');
    expect(err.message).toBe('WEIGHTS_FAILED: artifact team-a/qwen could not be fetched to this node: InsufficientCapacity: needs 16 GiB, 3 GiB free');
  });

  describe('once the node’s copy is Ready (Hugging Face layout)', () => {
    const pod = podManifestOf(artifactPod(), context({ weights: weights({ 'h100-0.team-a.qwen': copy({}) }) }));
    const engine = pod.spec!.containers[0];

    it('loads the snapshot as {{model_path}}, served as the artifact', () => {
      expect(engine.args!.slice(0, 2)).toEqual(['serve', SNAPSHOT]);
      expect(engine.args).toEqual(expect.arrayContaining(['--served-model-name', 'qwen']));
    });

    it('mounts the repository folder read-only from the node (hostPath, at the same path: the snapshot links into its blobs)', () => {
      const repo = `${CACHE}/hf/models--Qwen--Qwen2.5-0.5B-Instruct`;
      expect(pod.spec!.volumes).toContainEqual({ name: 'weights', hostPath: { path: repo, type: 'Directory' } });
      expect(engine.volumeMounts).toContainEqual({ name: 'weights', mountPath: repo, readOnly: true });
    });

    it('points huggingface_hub at the cache, offline', () => {
      expect(env(engine)).toMatchObject({ HF_HUB_CACHE: `${CACHE}/hf`, HF_HUB_OFFLINE: '1' });
    });
  });

  it('mounts a plain tree itself, without the Hugging Face variables, and keeps a served name the deployment gave', () => {
    const tree = '/var/lib/gpufleet/model-cache/h100-0/trees/sha256-ab12';
    const pod = podManifestOf(artifactPod('my-qwen'), context({ weights: weights({ 'h100-0.team-a.qwen': copy({ path: `${tree}/` }) }) }));
    const engine = pod.spec!.containers[0];
    expect(engine.args!.slice(0, 2)).toEqual(['serve', tree]);
    expect(engine.args).toEqual(expect.arrayContaining(['--served-model-name', 'my-qwen']));
    expect(pod.spec!.volumes).toContainEqual({ name: 'weights', hostPath: { path: tree, type: 'Directory' } });
    expect(engine.volumeMounts).toContainEqual({ name: 'weights', mountPath: tree, readOnly: true });
    expect(env(engine)).not.toHaveProperty('HF_HUB_CACHE');
    expect(env(engine)).not.toHaveProperty('HF_HUB_OFFLINE');
  });

  it('replaces the Pod when the copy moves to a new path (a new manifest), and mounts nothing for a pod without an artifact', () => {
    const hash = (path: string): string =>
      podManifestOf(artifactPod(), context({ weights: weights({ 'h100-0.team-a.qwen': copy({ path }) }) })).metadata!.annotations![KubeAnnotations.specHash];
    expect(hash(SNAPSHOT)).not.toBe(hash(SNAPSHOT.replace('a1b2c3', 'd4e5f6')));
    const plain = podManifestOf(enginePod(), context());
    expect(plain.spec!.volumes!.map((v) => v.name)).toEqual(['dshm']);
  });
});

describe('desiredObjects and reconcilePlan: pods waiting for their weights', () => {
  const downloading = weights({ 'h100-0.team-a.qwen': copy({ state: 'Downloading', percent: 12, bytesDone: 12, bytesTotal: 100, path: '' }) });
  const live = (pod: V1Pod, phase = 'Running'): V1Pod => ({ ...pod, metadata: { ...pod.metadata, uid: 'uid-1' }, status: { phase } });
  const ready = podManifestOf(artifactPod(), context({ weights: weights({ 'h100-0.team-a.qwen': copy({}) }) }));

  it('makes no Pod and reports the pod Starting with the progress; a Failed copy reports it Failed', () => {
    const desired = desiredObjects({ pods: [artifactPod()] }, context({ weights: downloading }));
    expect(desired.pods).toEqual([]);
    expect(desired.held).toEqual([{ namespace: 'team-a', name: 'llama-s0-bcdfg-server-0-0' }]);
    const status = failedManifestStatusOf(desired.failed[0], new Date(0));
    expect(status).toMatchObject({ state: 'Starting', namespace: 'team-a', workload: 'llama-s0-bcdfg', templateHash: 'abc123' });
    expect(status.message).toBe('WEIGHTS_PENDING: waiting for weights: Downloading 12% (12 of 100 bytes) (artifact team-a/qwen)');
    expect(reconcilePlan({ pods: desired.pods, services: [], held: desired.held }, { pods: [], services: [] }).apply.pods).toEqual([]);

    const failed = desiredObjects({ pods: [artifactPod()] }, context({ weights: weights({ 'h100-0.team-a.qwen': copy({ state: 'Failed', reason: 'DigestMismatch', path: '' }) }) }));
    expect(failed.held).toEqual([]);
    expect(failedManifestStatusOf(failed.failed[0], new Date(0)).state).toBe('Failed');
  });

  it('keeps a running Pod whose copy stops being Ready (only a new start waits), but replaces none that failed and deletes it when the copy Failed', () => {
    const waiting = desiredObjects({ pods: [artifactPod()] }, context({ weights: downloading }));
    const kept = reconcilePlan({ pods: waiting.pods, services: [], held: waiting.held }, { pods: [live(ready)], services: [] });
    expect(kept).toEqual({ apply: { pods: [], services: [] }, delete: [], wait: [], conflicts: [] });
    const evicted = reconcilePlan({ pods: waiting.pods, services: [], held: waiting.held }, { pods: [live(ready, 'Failed')], services: [] });
    expect(evicted.delete.map((d) => d.reason)).toEqual(['PodFailed']);
    const gone = desiredObjects({ pods: [artifactPod()] }, context({ weights: weights({ 'h100-0.team-a.qwen': copy({ state: 'Failed', reason: 'DigestMismatch', path: '' }) }) }));
    expect(reconcilePlan({ pods: gone.pods, services: [], held: gone.held }, { pods: [live(ready)], services: [] }).delete.map((d) => d.reason)).toEqual(['NotDesired']);
  });

  it('names a held Pod as it is named in a shared workload namespace', () => {
    expect(workloadNamespaceName({ namespace: 'team-a', name: 'llama-s0-bcdfg-server-0-0' }, 'gpufleet')).toEqual({ namespace: 'gpufleet', name: 'team-a-llama-s0-bcdfg-server-0-0' });
    expect(workloadNamespaceName({ namespace: 'team-a', name: 'x' }, '*')).toEqual({ namespace: 'team-a', name: 'x' });
  });
});


import type { EngineRun } from '@gpufleet/contracts';
import type { SandboxBind } from '@gpufleet/process-spec';
import { PodPlanError } from './errors';

/** What the node runtime reads of a node's copy of an artifact (ArtifactNodeStatus, artifact-nodes bucket). */
export interface WeightsCopy {
  /** "Downloading", "Ready", "Failed", "Evicted". */
  readonly state: string;
  readonly percent: number;
  readonly bytesDone: number;
  readonly bytesTotal: number;
  readonly reason: string;
  readonly message: string;
  /** The verified tree, or its Hugging Face snapshot directory; set only when Ready. */
  readonly path: string;
}

/** This node's copy of ModelArtifact `namespace/name`; undefined: the node's cache has not written one yet. */
export interface WeightsLookup {
  copyOf(namespace: string, artifact: string): WeightsCopy | undefined;
}

/** Where an engine pod finds its weights. */
export interface PodWeights {
  /** `{{model_path}}`: the copy's directory. */
  readonly modelPath: string;
  /** Bound read-only into the pod's sandbox at the same path. */
  readonly binds: readonly SandboxBind[];
  /** HF_HUB_CACHE and HF_HUB_OFFLINE for a Hugging Face layout; empty otherwise. */
  readonly env: Readonly<Record<string, string>>;
}

/** `<HF_HUB_CACHE>/models--org--name/snapshots/<commit>`: the layout `huggingface_hub` reads offline. */
const HF_SNAPSHOT = /^(.*)\/(models--[^/]+)\/snapshots\/[^/]+\/?$/;

/**
 * The weights of an engine pod whose EngineRun names `artifact`, from this node's copy. Throws
 * WEIGHTS_PENDING (the pod is reported Starting, with the progress, and planned again when the
 * copy changes) until the copy is Ready, and WEIGHTS_FAILED with the copy's reason when the
 * cache gave up on it.
 */
export function resolvePodWeights(namespace: string, artifact: string, lookup: WeightsLookup | undefined): PodWeights {
  const copy = lookup?.copyOf(namespace, artifact);
  if (!copy) throw new PodPlanError('WEIGHTS_PENDING', `waiting for weights: this node's cache has no copy of artifact ${namespace}/${artifact} yet`);
  if (copy.state === 'Failed') {
    throw new PodPlanError('WEIGHTS_FAILED', `artifact ${namespace}/${artifact} could not be fetched to this node: ${copy.reason || 'Failed'}${copy.message ? `: ${copy.message}` : ''}`);
  }
  if (copy.state !== 'Ready' || !copy.path) {
    const progress = copy.state === 'Downloading' ? `Downloading ${Math.floor(copy.percent)}%${copy.bytesTotal > 0 ? ` (${copy.bytesDone} of ${copy.bytesTotal} bytes)` : ''}` : copy.state || 'not started';
    throw new PodPlanError('WEIGHTS_PENDING', `waiting for weights: ${progress} (artifact ${namespace}/${artifact})`);
  }
  const path = copy.path.replace(/\/+$/, '');
  const hf = HF_SNAPSHOT.exec(path);
  if (hf) {
    // The snapshot's files are links into the repository folder's blobs: bind the whole folder.
    const repoFolder = `${hf[1]}/${hf[2]}`;
    return { modelPath: path, binds: [{ source: repoFolder, target: repoFolder }], env: { HF_HUB_CACHE: hf[1]!, HF_HUB_OFFLINE: '1' } };
  }
  return { modelPath: path, binds: [{ source: path, target: path }], env: {} };
}

/** The EngineRun an engine is started from once its weights are on the node: the copy as `{{model_path}}`, served as the artifact unless named otherwise. */
export function withPodWeights(run: EngineRun, weights: PodWeights): EngineRun {
  return { ...run, model: weights.modelPath, servedModelName: run.servedModelName || run.artifact };
}

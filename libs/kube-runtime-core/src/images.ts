import type { EngineKind } from '@gpufleet/engine-presets';
import { PodPlanError } from '@gpufleet/node-runtime-core';

/** What the Kubernetes runtime runs: each engine, engine-sim on simulated nodes, the instance sidecar and workload. */
export type ImageKind = EngineKind | 'engine-sim' | 'sshd' | 'instance';

/** Repositories of the engines' official images; the tag follows `engine.version` where the project tags its releases. */
export const ENGINE_IMAGE_REPOSITORIES: Readonly<Partial<Record<EngineKind, string>>> = {
  vllm: 'vllm/vllm-openai',
  sglang: 'lmsysorg/sglang',
  trtllm: 'nvcr.io/nvidia/tensorrt-llm/release',
  'llama-cpp': 'ghcr.io/ggml-org/llama.cpp',
};

/**
 * Images used when neither the context nor the pod names one. Pinned, not `latest`: a node
 * pulling a newer engine than the presets were written for would change the command's meaning.
 * `custom` has none: a custom engine's image is the user's.
 */
export const DEFAULT_IMAGES: Readonly<Partial<Record<ImageKind, string>>> = {
  vllm: 'vllm/vllm-openai:v0.11.0',
  sglang: 'lmsysorg/sglang:v0.5.4',
  trtllm: 'nvcr.io/nvidia/tensorrt-llm/release:1.0.0',
  'llama-cpp': 'ghcr.io/ggml-org/llama.cpp:server-cuda',
  // gpufleet's own images follow the chart's naming (`gpufleet/<name>`); the reconciler sets registry and tag from global.image.
  'engine-sim': 'gpufleet/engine-sim:latest',
  sshd: 'gpufleet/sshd:latest',
  instance: 'nvidia/cuda:12.6.3-base-ubuntu24.04',
};

/**
 * Where an engine's official image keeps a binary that is not on its PATH: the Pod's `command`
 * replaces the image's entrypoint, so it must name the binary as the image has it.
 */
const IMAGE_BINARIES: Readonly<Partial<Record<EngineKind, Readonly<Record<string, string>>>>> = {
  'llama-cpp': { 'llama-server': '/app/llama-server' },
};

/** The command to run in `image` for an engine command: the image's own path where its official image needs one. */
export function containerCommandOf(kind: ImageKind, image: string, command: string): string {
  const repository = ENGINE_IMAGE_REPOSITORIES[kind as EngineKind];
  if (!repository || !image.startsWith(`${repository}:`)) return command;
  return IMAGE_BINARIES[kind as EngineKind]?.[command] ?? command;
}

/** How an engine's release becomes its image tag (vLLM and SGLang tag `v0.11.0`, TensorRT-LLM `1.0.0`). */
const VERSION_TAG: Readonly<Partial<Record<EngineKind, (version: string) => string>>> = {
  vllm: (v) => `v${v.replace(/^v/, '')}`,
  sglang: (v) => `v${v.replace(/^v/, '')}`,
  trtllm: (v) => v.replace(/^v/, ''),
};

/**
 * The image of `kind`: the override (a whole reference, used as it is), else the engine's
 * repository tagged with `version` when the engine tags releases, else the default. Throws
 * `INVALID_ENGINE_SPEC` for a custom engine without an image.
 */
export function imageOf(kind: ImageKind, overrides: Readonly<Partial<Record<ImageKind, string>>> = {}, version = ''): string {
  const override = overrides[kind];
  if (override) return override;
  const repository = ENGINE_IMAGE_REPOSITORIES[kind as EngineKind];
  const tag = VERSION_TAG[kind as EngineKind];
  if (repository && tag && version) return `${repository}:${tag(version)}`;
  const image = DEFAULT_IMAGES[kind];
  if (!image) throw new PodPlanError('INVALID_ENGINE_SPEC', `engine ${kind} has no default image; configure one (images.${kind}) for the Kubernetes runtime`);
  return image;
}

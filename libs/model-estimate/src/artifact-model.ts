import type { ArtifactModel } from '@gpufleet/contracts';
import type { ModelDescription, WeightsSource } from './estimate';
import type { ModelShape } from './model-shape';

const WEIGHTS_SOURCES: readonly WeightsSource[] = ['safetensors-headers', 'safetensors-index', 'config-parameters', 'gguf'];

/** A description as the artifact's status stores it (proto3: absent is zero or empty). */
export function artifactModelOf(description: ModelDescription): ArtifactModel {
  const s = description.shape;
  return {
    weightsBytes: description.weights.bytes,
    weightsSource: description.weights.source,
    bytesByDtype: { ...(description.weights.byDtype ?? {}) },
    parameters: description.weights.parameters ?? 0,
    shape: {
      architecture: s.architecture,
      layers: s.layers,
      hiddenSize: s.hiddenSize,
      intermediateSize: s.intermediateSize,
      vocabSize: s.vocabSize,
      attentionHeads: s.attentionHeads,
      kvHeads: s.kvHeads,
      headDim: s.headDim,
      valueHeadDim: s.valueHeadDim,
      dtype: s.dtype ?? '',
      tieWordEmbeddings: s.tieWordEmbeddings,
      attentionBias: s.attentionBias,
      qkNorm: s.qkNorm,
      normsPerLayer: s.normsPerLayer,
      slidingLayers: s.layerAttention.map((a) => a === 'sliding'),
      slidingWindow: s.slidingWindow ?? 0,
      mla: s.mla && { kvLoraRank: s.mla.kvLoraRank, qkRopeHeadDim: s.mla.qkRopeHeadDim, qkNopeHeadDim: s.mla.qkNopeHeadDim, vHeadDim: s.mla.vHeadDim, qLoraRank: s.mla.qLoraRank ?? 0 },
      moe: s.moe && { ...s.moe, moeLayers: [...s.moe.moeLayers] },
      quantizationMethod: s.quantization?.method ?? '',
      quantizationBits: s.quantization?.bits ?? 0,
      maxContextLength: s.maxContextLength ?? 0,
    },
  };
}

/** The description an estimate is computed from, back from the status; undefined when the record lacks its shape. */
export function modelDescriptionOf(model: ArtifactModel | undefined): ModelDescription | undefined {
  const s = model?.shape;
  if (!model || !s || s.layers === 0 || !(WEIGHTS_SOURCES as readonly string[]).includes(model.weightsSource)) return undefined;
  const shape: ModelShape = {
    architecture: s.architecture,
    layers: s.layers,
    hiddenSize: s.hiddenSize,
    intermediateSize: s.intermediateSize,
    vocabSize: s.vocabSize,
    attentionHeads: s.attentionHeads,
    kvHeads: s.kvHeads,
    headDim: s.headDim,
    valueHeadDim: s.valueHeadDim,
    ...(s.dtype ? { dtype: s.dtype } : {}),
    tieWordEmbeddings: s.tieWordEmbeddings,
    attentionBias: s.attentionBias,
    qkNorm: s.qkNorm,
    normsPerLayer: s.normsPerLayer,
    layerAttention: s.slidingLayers.map((sliding) => (sliding ? 'sliding' : 'full')),
    ...(s.slidingWindow ? { slidingWindow: s.slidingWindow } : {}),
    ...(s.mla
      ? { mla: { kvLoraRank: s.mla.kvLoraRank, qkRopeHeadDim: s.mla.qkRopeHeadDim, qkNopeHeadDim: s.mla.qkNopeHeadDim, vHeadDim: s.mla.vHeadDim, ...(s.mla.qLoraRank ? { qLoraRank: s.mla.qLoraRank } : {}) } }
      : {}),
    ...(s.moe ? { moe: { ...s.moe, moeLayers: [...s.moe.moeLayers] } } : {}),
    ...(s.quantizationMethod ? { quantization: { method: s.quantizationMethod, bits: s.quantizationBits } } : {}),
    ...(s.maxContextLength ? { maxContextLength: s.maxContextLength } : {}),
  };
  const byDtype = Object.keys(model.bytesByDtype).length > 0 ? { ...model.bytesByDtype } : undefined;
  return {
    shape,
    weights: {
      bytes: model.weightsBytes,
      source: model.weightsSource as WeightsSource,
      ...(byDtype ? { byDtype } : {}),
      ...(model.parameters ? { parameters: model.parameters } : {}),
    },
  };
}

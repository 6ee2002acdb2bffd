import type { ModelShape } from './model-shape';

/**
 * Parameters of a decoder counted from its shape: embeddings, the LM head unless tied, and per
 * layer attention (GQA or MLA), the MLP (gated, as every current LLM: gate, up, down) or MoE block
 * (routed experts, router, shared experts), and norms. It is the fallback when neither the
 * safetensors headers nor the index's `total_size` can be read, and it leaves out vision towers
 * and projectors of multimodal models, which config.json describes in model-specific ways.
 */
export function parameterCountOf(shape: ModelShape): number {
  const h = shape.hiddenSize;
  const embeddings = shape.vocabSize * h * (shape.tieWordEmbeddings ? 1 : 2);
  let layers = 0;
  for (let i = 0; i < shape.layers; i++) {
    layers += attentionParameters(shape) + mlpParameters(shape, i) + shape.normsPerLayer * h;
  }
  return embeddings + layers + h;
}

function attentionParameters(shape: ModelShape): number {
  const h = shape.hiddenSize;
  const heads = shape.attentionHeads;
  const mla = shape.mla;
  if (mla) {
    const qHead = mla.qkNopeHeadDim + mla.qkRopeHeadDim;
    const query = mla.qLoraRank ? h * mla.qLoraRank + mla.qLoraRank + mla.qLoraRank * heads * qHead : h * heads * qHead;
    const kvDown = h * (mla.kvLoraRank + mla.qkRopeHeadDim) + mla.kvLoraRank;
    const kvUp = mla.kvLoraRank * heads * (mla.qkNopeHeadDim + mla.vHeadDim);
    return query + kvDown + kvUp + heads * mla.vHeadDim * h;
  }
  const q = heads * shape.headDim;
  const kv = shape.kvHeads * shape.headDim + shape.kvHeads * shape.valueHeadDim;
  const bias = shape.attentionBias ? q + kv : 0;
  const qkNorm = shape.qkNorm ? 2 * shape.headDim : 0;
  return h * q + h * kv + q * h + bias + qkNorm;
}

function mlpParameters(shape: ModelShape, layer: number): number {
  const h = shape.hiddenSize;
  const moe = shape.moe;
  if (!moe || !moe.moeLayers[layer]) return 3 * h * shape.intermediateSize;
  const routed = moe.experts * 3 * h * moe.expertIntermediateSize;
  const router = h * moe.experts;
  const shared = 3 * h * moe.sharedIntermediateSize + (moe.sharedExpertGate ? h : 0);
  return routed + router + shared;
}

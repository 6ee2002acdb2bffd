/**
 * Payload of an engine's KV-cache events (`RawSubjects.kvCacheEvents`): vLLM's KV events
 * (BlockStored, BlockRemoved, AllBlocksCleared) with vLLM's field names, as plain JSON, not a
 * proto message. Documented in docs/events.md#engine-kv-cache-events.
 */

export interface BlockStored {
  type: 'BlockStored';
  block_hashes: number[];
  /** Hash of the block before the first of `block_hashes`; null at the start of a prompt. */
  parent_block_hash: number | null;
  /** Tokens of the stored blocks, `block_size` per block, in order. */
  token_ids: number[];
  block_size: number;
  lora_id: null;
  medium: 'GPU';
}

export interface BlockRemoved {
  type: 'BlockRemoved';
  block_hashes: number[];
  medium: 'GPU';
}

export interface AllBlocksCleared {
  type: 'AllBlocksCleared';
}

export type KvCacheEvent = BlockStored | BlockRemoved | AllBlocksCleared;

/** One NATS message: vLLM's KVEventBatch plus who sent it. */
export interface KvEventBatch {
  /** Seconds since the epoch (float), as vLLM's `ts`. */
  ts: number;
  /** 0, 1, 2, … per process start; a consumer that sees a gap missed batches. */
  seq: number;
  replica: string;
  /** The replica's first served model name. */
  model: string;
  block_size: number;
  events: KvCacheEvent[];
}

// KV cache events on a real nats-server: what a KV-aware router or the KV block index consumes.
import { connect, type NatsConnection, type Subscription } from 'nats';
import { kvCacheEventsSubject, RawSubjects } from '@gpufleet/contracts';
import { blockHashes } from '@gpufleet/engine-sim-core';
import { chatPromptTokenIds, type ChatMessage } from '@gpufleet/openai-protocol';
import { startNats, waitFor, type RunningServer } from '@gpufleet/testing';
import { EngineSimProcesses, post, TEST_MODEL } from './__fixtures__/engine-sim.process';

interface Batch {
  ts: number;
  seq: number;
  replica: string;
  model: string;
  block_size: number;
  events: { type: string; block_hashes?: number[]; parent_block_hash?: number | null; token_ids?: number[]; block_size?: number; medium?: string }[];
}

let nats: RunningServer;
let nc: NatsConnection;
const processes = new EngineSimProcesses();

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
});

afterAll(async () => {
  await processes.stopAll();
  await nc?.close();
  await nats?.dispose();
});

function collect(sub: Subscription): { batches: Batch[]; headers: string[] } {
  const out = { batches: [] as Batch[], headers: [] as string[] };
  void (async () => {
    for await (const msg of sub) {
      out.batches.push(JSON.parse(new TextDecoder().decode(msg.data)) as Batch);
      out.headers.push(msg.headers?.get('gpufleet-event') ?? '');
    }
  })();
  return out;
}

const paragraph = (topic: string, sentences: number): string =>
  Array.from({ length: sentences }, (_, i) => `The ${topic} number ${i} keeps its blocks warm.`).join(' ');

it('publishes BlockStored with chained hashes a consumer can recompute, and BlockRemoved on eviction', async () => {
  const sub = nc.subscribe(kvCacheEventsSubject('dev', 'sim-1'));
  const received = collect(sub);
  await nc.flush();
  // 48 blocks of 16 tokens: two ~20-block prompts fit, a third evicts.
  const sim = await processes.start(['--kv-cache-blocks', '48', '--itl-ms', '0', '--prefill-us-per-token', '0'], { NATS_URL: nats.url, GPUFLEET_CLUSTER: 'dev' });

  await waitFor('AllBlocksCleared on start', () => received.batches.some((b) => b.events[0]?.type === 'AllBlocksCleared') || undefined, { timeoutMs: 5_000 });
  expect(received.headers[0]).toBe(RawSubjects.kvCacheEvents.type);
  expect(received.batches[0]).toMatchObject({ seq: 0, replica: 'sim-1', model: TEST_MODEL, block_size: 16 });

  const system: ChatMessage = { role: 'system', content: paragraph('cache', 20) };
  const first: ChatMessage[] = [system, { role: 'user', content: 'First question?' }];
  const res = await post(sim.base, '/v1/chat/completions', { model: TEST_MODEL, messages: first, max_tokens: 2 });
  expect(res.status).toBe(200);

  const tokens = chatPromptTokenIds(first);
  const hashes = blockHashes(tokens, 16);
  expect(hashes.length).toBeGreaterThan(10);
  const stored = await waitFor('BlockStored of the first prompt', () => received.batches.flatMap((b) => b.events).find((e) => e.type === 'BlockStored'), { timeoutMs: 5_000 });
  expect(stored).toEqual({
    type: 'BlockStored',
    block_hashes: hashes,
    parent_block_hash: null,
    token_ids: tokens.slice(0, hashes.length * 16),
    block_size: 16,
    lora_id: null,
    medium: 'GPU',
  });

  // A second question in the same conversation shares the system prompt's blocks.
  const second: ChatMessage[] = [system, { role: 'user', content: 'A different second question, somewhat longer than the first one was.' }];
  const again = (await post(sim.base, '/v1/chat/completions', { model: TEST_MODEL, messages: second, max_tokens: 2 })).json as {
    usage: { prompt_tokens_details: { cached_tokens: number } };
  };
  const secondHashes = blockHashes(chatPromptTokenIds(second), 16);
  let shared = 0;
  while (shared < secondHashes.length && secondHashes[shared] === hashes[shared]) shared++;
  expect(again.usage.prompt_tokens_details.cached_tokens).toBe(shared * 16);
  const storedAgain = await waitFor(
    'BlockStored of the new suffix',
    () => received.batches.flatMap((b) => b.events).filter((e) => e.type === 'BlockStored')[1],
    { timeoutMs: 5_000 },
  );
  expect(storedAgain.parent_block_hash).toBe(hashes[shared - 1]);
  expect(storedAgain.block_hashes).toEqual(secondHashes.slice(shared));

  // An unrelated long prompt needs more than the free blocks: the LRU tail goes.
  const third = await post(sim.base, '/v1/chat/completions', { model: TEST_MODEL, messages: [{ role: 'user', content: paragraph('router', 70) }], max_tokens: 2 });
  expect(third.status).toBe(200);
  const removed = await waitFor('BlockRemoved', () => received.batches.flatMap((b) => b.events).find((e) => e.type === 'BlockRemoved'), { timeoutMs: 5_000 });
  expect(removed.block_hashes!.length).toBeGreaterThan(0);
  expect(removed.medium).toBe('GPU');

  const seqs = received.batches.map((b) => b.seq);
  expect(seqs).toEqual(seqs.map((_, i) => i));
  sub.unsubscribe();
});

import { createHash } from 'node:crypto';
import { describeArtifact } from './artifact';
import type { RangeReader } from './range-reader';
import { SAMPLE_LLAMA_GGUF_REPO, SAMPLE_LLAMA_REPO, sampleHubRepos } from '@gpufleet/testing';

/** The files of one sample repository, read as a node's cache would hand them to an estimate. */
function filesOf(repo: string): Map<string, Buffer> {
  const spec = sampleHubRepos().find((r) => r.id === repo)!;
  return new Map(spec.commits[spec.commits.length - 1].files.map((f) => [f.path, 'bytes' in f.content ? Buffer.from(f.content.bytes) : Buffer.alloc(0)]));
}

function readerOf(files: Map<string, Buffer>): RangeReader {
  const get = (path: string) => {
    const bytes = files.get(path);
    if (!bytes) throw new Error(`no ${path}`);
    return bytes;
  };
  return {
    readRange: async (path, start, end) => new Uint8Array(get(path).subarray(start, end + 1)),
    readSmallFile: async (path) => new Uint8Array(get(path)),
  };
}

// 2 layers × (q 64×64, k 32×64, v 32×64, o 64×64, gate/up/down 3 × 128×64, 2 norms of 64)
// + embeddings and lm_head (260×64 each) + the final norm.
const PARAMETERS = 2 * (64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 128 * 64 + 2 * 64) + 2 * 260 * 64 + 64;

describe('sample hub repositories', () => {
  it('tiny-llama: a config, safetensors header and tokenizer that agree, read as a memory estimate reads them', async () => {
    const files = filesOf(SAMPLE_LLAMA_REPO);
    const described = await describeArtifact(readerOf(files), [...files.keys()]);
    expect(described.shape).toMatchObject({ architecture: 'llama', layers: 2, hiddenSize: 64, vocabSize: 260, attentionHeads: 4, kvHeads: 2, headDim: 16, dtype: 'bfloat16' });
    expect(described.weights).toEqual({ bytes: PARAMETERS * 2, source: 'safetensors-headers', byDtype: { BF16: PARAMETERS * 2 } });
    // The data section follows the header exactly: the file is the header plus every tensor's bytes.
    const st = files.get('model.safetensors')!;
    expect(st.length).toBe(8 + Number(st.readBigUInt64LE(0)) + PARAMETERS * 2);

    const tokenizer = JSON.parse(files.get('tokenizer.json')!.toString()) as { model: { type: string; vocab: Record<string, number> }; added_tokens: Array<{ id: number; content: string }> };
    expect(tokenizer.model.type).toBe('BPE');
    const ids = Object.values(tokenizer.model.vocab).sort((a, b) => a - b);
    expect(ids).toEqual([...Array(260).keys()]);
    expect(tokenizer.model.vocab['Ġ']).toBe(0x20); // byte-level spelling of a space
    expect(tokenizer.added_tokens.map((t) => t.id)).toEqual([256, 257, 258, 259]);
    const config = JSON.parse(files.get('config.json')!.toString()) as Record<string, number>;
    expect(tokenizer.added_tokens.find((t) => t.id === config.bos_token_id)?.content).toBe('<|begin_of_text|>');
  });

  it('tiny-llama-gguf: the same model as GGUF v3, parsed by @huggingface/gguf', async () => {
    const files = filesOf(SAMPLE_LLAMA_GGUF_REPO);
    const described = await describeArtifact(readerOf(files), [...files.keys()]);
    expect(described.shape).toMatchObject({ architecture: 'llama', layers: 2, hiddenSize: 64, vocabSize: 260, attentionHeads: 4, kvHeads: 2, headDim: 16 });
    expect(described.weights).toMatchObject({ bytes: PARAMETERS * 4, source: 'gguf' });
  });

  it('is the same on every call (stable commits and manifest digests from run to run)', () => {
    const digests = () => sampleHubRepos().flatMap((r) => r.commits[0].files.map((f) => createHash('sha256').update('bytes' in f.content ? f.content.bytes : '').digest('hex')));
    expect(digests()).toEqual(digests());
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeArtifact } from './artifact';
import { DirectoryRangeReader } from './range-reader';
import { MAX_SAFETENSORS_HEADER_BYTES, parseSafetensorsIndex, readSafetensorsHeader } from './safetensors';
import { writeSparseSafetensors } from '@gpufleet/testing';

let dir: string;
let reader: DirectoryRangeReader;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'estimate-st-'));
  reader = new DirectoryRangeReader(dir);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file of the 8-byte length prefix (as given) and the header text. */
function rawFile(name: string, header: string, declaredLength = Buffer.byteLength(header)): string {
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(declaredLength));
  writeFileSync(join(dir, name), Buffer.concat([prefix, Buffer.from(header)]));
  return name;
}

const tensor = (dtype: string, shape: number[], offsets: [number, number]) => ({ dtype, shape, data_offsets: offsets });

describe('safetensors headers', () => {
  it('reads dtype, shape and size of every tensor and the metadata, without reading the data', async () => {
    writeSparseSafetensors(join(dir, 'ok.safetensors'), [{ name: 'w', shape: [1024, 1024] }, { name: 'b', shape: [1024] }], 'BF16');
    const header = await readSafetensorsHeader(reader, 'ok.safetensors');
    expect(header.tensors).toEqual([
      { name: 'w', dtype: 'BF16', shape: [1024, 1024], bytes: 2 * 1024 * 1024 },
      { name: 'b', dtype: 'BF16', shape: [1024], bytes: 2048 },
    ]);
    expect(header.metadata).toEqual({ format: 'pt' });
    expect(header.dataBytes).toBe(2 * 1024 * 1024 + 2048);
  });

  it.each([
    ['a header length above the bound', () => rawFile('huge.safetensors', '{}', MAX_SAFETENSORS_HEADER_BYTES + 1), `huge.safetensors: the header length is ${MAX_SAFETENSORS_HEADER_BYTES + 1} bytes, above the ${MAX_SAFETENSORS_HEADER_BYTES}-byte bound`],
    ['a file shorter than its declared header', () => rawFile('short.safetensors', '{"a":1}', 4096), 'short.safetensors: the header length says 4096 bytes of JSON but the file ends after 7'],
    ['a file shorter than the length prefix', () => (writeFileSync(join(dir, 'tiny.safetensors'), 'abc'), 'tiny.safetensors'), 'tiny.safetensors: the file is 3 bytes; a safetensors file starts with an 8-byte little-endian header length'],
    ['JSON that is not an object', () => rawFile('array.safetensors', '[1,2]'), 'array.safetensors: the header is not a JSON object'],
    ['an unknown dtype', () => rawFile('dtype.safetensors', JSON.stringify({ w: tensor('Q4', [2], [0, 1]) })), 'dtype.safetensors: tensor "w".dtype is "Q4"; expected one of'],
    ['a shape that is not integers', () => rawFile('shape.safetensors', JSON.stringify({ w: tensor('F16', [2.5], [0, 5]) })), 'shape.safetensors: tensor "w".shape is [2.5]; expected an array of non-negative integers'],
    ['offsets that disagree with the shape', () => rawFile('size.safetensors', JSON.stringify({ w: tensor('F16', [4], [0, 6]) })), 'size.safetensors: tensor "w" spans 6 bytes but F16[4] needs 8'],
    ['a hole between tensors', () => rawFile('hole.safetensors', JSON.stringify({ a: tensor('F16', [2], [0, 4]), b: tensor('F16', [2], [8, 12]) })), 'hole.safetensors: tensor "b" starts at byte 8 of the data, expected 4'],
  ])('rejects %s, naming the file and the field', async (_case, write, message) => {
    await expect(readSafetensorsHeader(reader, write())).rejects.toThrow(`INVALID_SAFETENSORS: ${message}`);
  });
});

describe('model.safetensors.index.json', () => {
  it('reads the weight map, its shards and metadata.total_size', () => {
    const index = parseSafetensorsIndex(JSON.stringify({ metadata: { total_size: 42 }, weight_map: { a: 'model-2.safetensors', b: 'model-1.safetensors', c: 'model-2.safetensors' } }), 'model.safetensors.index.json');
    expect(index).toEqual({ totalSize: 42, weightMap: { a: 'model-2.safetensors', b: 'model-1.safetensors', c: 'model-2.safetensors' }, shards: ['model-1.safetensors', 'model-2.safetensors'] });
  });

  it.each([
    [{ metadata: {} }, 'weight_map is missing or empty'],
    [{ weight_map: { a: 'model.bin' } }, 'weight_map["a"] is "model.bin"; expected a .safetensors file name'],
    [{ metadata: { total_size: -1 }, weight_map: { a: 'x.safetensors' } }, 'metadata.total_size is -1; expected a non-negative integer of bytes'],
  ])('rejects %j', (index, message) => {
    expect(() => parseSafetensorsIndex(JSON.stringify(index), 'model.safetensors.index.json')).toThrow(`INVALID_SAFETENSORS_INDEX: model.safetensors.index.json: ${message}`);
  });

  it('says which shards the artifact lacks', async () => {
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ model_type: 'llama', num_hidden_layers: 1, hidden_size: 8, num_attention_heads: 2, vocab_size: 10 }));
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors' } }));
    await expect(describeArtifact(reader, ['config.json', 'model.safetensors.index.json', 'model-00001-of-00002.safetensors'])).rejects.toThrow(
      'MISSING_MODEL_FILES: model.safetensors.index.json names shards the artifact does not have: model-00002-of-00002.safetensors',
    );
  });

  it('refuses to read outside the artifact root', async () => {
    await expect(reader.readRange('../etc/passwd', 0, 7)).rejects.toThrow('../etc/passwd is outside the artifact root');
  });
});

// The hub simulator against a client no one here wrote: @huggingface/hub, pointed at it with hubUrl.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { downloadFileToCacheDir, fileDownloadInfo, listFiles, modelInfo, pathsInfo, snapshotDownload } from '@huggingface/hub';
import { HubSimulator, startHubSimulator } from './index';

const TOKEN = 'hf_simulator_reader';
const CONFIG = JSON.stringify({ architectures: ['LlamaForCausalLM'], num_hidden_layers: 2 });
const WEIGHTS = 3 * 1024 * 1024 + 17; // over the client's 1 MB buffering threshold, so it is fetched by range

let hub: HubSimulator;
let cacheDir: string;

beforeAll(async () => {
  // the client prints a debug line per file it downloads
  jest.spyOn(console, 'debug').mockImplementation(() => undefined);
  hub = await startHubSimulator({
    hashCacheDir: null,
    treePageSize: 2, // forces the client to follow Link: rel="next"
    tokens: { [TOKEN]: { canRead: ['acme/private-llm'] } },
    repos: [
      {
        id: 'acme/tiny-llm',
        commits: [
          { title: 'v1', files: [{ path: 'config.json', content: { bytes: '{"old":true}' } }] },
          {
            title: 'v2',
            files: [
              { path: 'config.json', content: { bytes: CONFIG } },
              { path: 'model.safetensors', content: { seed: 'tiny-llm-weights', size: WEIGHTS } },
              { path: 'tokenizer/tokenizer.json', content: { bytes: '{"vocab":{}}' } },
              { path: 'README.md', content: { bytes: '# tiny\n' } },
            ],
          },
        ],
        tags: { 'v1.0': 0 },
      },
      { id: 'acme/private-llm', private: true, commits: [{ files: [{ path: 'config.json', content: { bytes: CONFIG } }] }] },
    ],
  });
  cacheDir = mkdtempSync(join(tmpdir(), 'hf-client-'));
});

afterAll(async () => {
  await hub.close();
  rmSync(cacheDir, { recursive: true, force: true });
});

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

it('snapshotDownload fetches every file of main, LFS through the CDN redirect, with the bytes the hub describes', async () => {
  const snapshot = await snapshotDownload({ repo: 'acme/tiny-llm', hubUrl: hub.url, cacheDir });
  const commit = hub.repo('acme/tiny-llm').branches.get('main');
  expect(snapshot).toBe(join(cacheDir, 'models--acme--tiny-llm', 'snapshots', commit as string));
  expect(readFileSync(join(cacheDir, 'models--acme--tiny-llm', 'refs', 'main'), 'utf8')).toBe(commit);

  expect(readFileSync(join(snapshot, 'config.json'), 'utf8')).toBe(CONFIG);
  expect(readFileSync(join(snapshot, 'tokenizer/tokenizer.json'), 'utf8')).toBe('{"vocab":{}}');
  const weights = readFileSync(join(snapshot, 'model.safetensors'));
  const expected = await hub.hashesOf('acme/tiny-llm', 'main', 'model.safetensors');
  expect(weights.length).toBe(WEIGHTS);
  expect(sha256(weights)).toBe(expected.sha256);
  // the client names the LFS blob by its sha256 (pathsInfo's lfs.oid)
  expect(realpathSync(join(snapshot, 'model.safetensors'))).toBe(join(realpathSync(cacheDir), 'models--acme--tiny-llm', 'blobs', expected.sha256));

  // it listed the tree in pages of 2 and probed each file with Range: bytes=0-0
  const treeCalls = hub.stats.requests.filter((r) => r.url.includes('/tree/'));
  expect(treeCalls.length).toBeGreaterThanOrEqual(3);
  expect(hub.stats.rangesServed('acme/tiny-llm', 'model.safetensors')).toContainEqual([0, 0]);
  expect(hub.stats.bytesServed('acme/tiny-llm', 'model.safetensors')).toBe(WEIGHTS + 1);
});

it('downloadFileToCacheDir at a tag gets the file of that commit', async () => {
  const pointer = await downloadFileToCacheDir({ repo: 'acme/tiny-llm', path: 'config.json', revision: 'v1.0', hubUrl: hub.url, cacheDir });
  expect(readFileSync(pointer, 'utf8')).toBe('{"old":true}');
  expect(statSync(pointer).size).toBe(12);
  expect(readlinkSync(pointer)).toContain('blobs');
});

it('reports sizes, git oids and LFS digests as the hub does, and never advertises Xet', async () => {
  const info = await modelInfo({ name: 'acme/tiny-llm', hubUrl: hub.url, additionalFields: ['sha'] });
  expect(info.sha).toBe(hub.repo('acme/tiny-llm').branches.get('main'));
  const files = [];
  for await (const f of listFiles({ repo: 'acme/tiny-llm', recursive: true, hubUrl: hub.url })) files.push(f);
  expect(files.map((f) => `${f.type}:${f.path}`)).toEqual(['file:README.md', 'file:config.json', 'file:model.safetensors', 'directory:tokenizer', 'file:tokenizer/tokenizer.json']);
  const weights = files.find((f) => f.path === 'model.safetensors');
  const hashes = await hub.hashesOf('acme/tiny-llm', 'main', 'model.safetensors');
  expect(weights?.lfs).toEqual({ oid: hashes.sha256, size: WEIGHTS, pointerSize: expect.any(Number) });
  const config = files.find((f) => f.path === 'config.json');
  expect(config?.oid).toBe(createHash('sha1').update(`blob ${CONFIG.length}\0${CONFIG}`).digest('hex'));

  const [expanded] = await pathsInfo({ repo: 'acme/tiny-llm', paths: ['model.safetensors'], expand: true, hubUrl: hub.url });
  expect(expanded.lastCommit.title).toBe('v2');
  const download = await fileDownloadInfo({ repo: 'acme/tiny-llm', path: 'model.safetensors', hubUrl: hub.url });
  expect(download).toMatchObject({ size: WEIGHTS, xet: undefined });
  expect(download?.url).toContain('/cdn-lfs/');
});

it('a private repository needs the token; a wrong token is refused with the hub status', async () => {
  await expect(modelInfo({ name: 'acme/private-llm', hubUrl: hub.url })).rejects.toMatchObject({ statusCode: 401 });
  await expect(modelInfo({ name: 'acme/private-llm', hubUrl: hub.url, accessToken: 'hf_not_a_token' })).rejects.toMatchObject({ statusCode: 401, message: expect.stringContaining('Invalid credentials') });
  const pointer = await downloadFileToCacheDir({ repo: 'acme/private-llm', path: 'config.json', hubUrl: hub.url, cacheDir, accessToken: TOKEN });
  expect(readFileSync(pointer, 'utf8')).toBe(CONFIG);
});

it('curl follows the LFS redirect to the CDN and gets the same bytes, whole or by range', async () => {
  const out = join(cacheDir, 'curl.bin');
  const url = `${hub.url}/acme/tiny-llm/resolve/main/model.safetensors`;
  await promisify(execFile)('curl', ['-sSfL', '-o', out, url]);
  expect(sha256(readFileSync(out))).toBe((await hub.hashesOf('acme/tiny-llm', 'main', 'model.safetensors')).sha256);
  const { stdout } = await promisify(execFile)('curl', ['-sSfL', '-r', '100-199', url], { encoding: 'buffer' });
  expect(Buffer.compare(stdout, readFileSync(out).subarray(100, 200))).toBe(0);
});

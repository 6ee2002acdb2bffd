// The resolver against the hub simulator on a real socket: every failure reason, paging, patterns,
// revision pinning, gated and private repositories, bad tokens, and the hub down with expectedDigest.
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HubSimulator, startHubSimulator } from '@gpufleet/testing';
import { ArtifactResolution, createFileDigester, downloadRequest, ModelArtifactSpec, ResolveOutcome, resolveArtifact, SecretLookup, validateArtifactSpec } from './index';

const READER = 'hf_reader_token';
const OUTSIDER = 'hf_outsider_token';
const SECRETS: Record<string, Record<string, string>> = {
  'hf-reader': { token: `${READER}\n` },
  'hf-outsider': { token: OUTSIDER },
  'hf-wrong': { token: 'hf_revoked_long_ago' },
  'hf-garbled': { token: 'hf_two words' },
};
const secrets: SecretLookup = async (ref) => SECRETS[ref.name]?.[ref.key];
const WEIGHTS = 2 * 1024 * 1024 + 5;

let hub: HubSimulator;

const files = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `shards/part-${i}.json`, content: { bytes: `{"part":${i}}` } }));

beforeAll(async () => {
  hub = await startHubSimulator({
    hashCacheDir: null,
    treePageSize: 3,
    tokens: { [READER]: { canRead: ['acme/private', 'acme/gated'] }, [OUTSIDER]: {} },
    repos: [
      {
        id: 'acme/llm',
        commits: [
          {
            files: [
              { path: 'config.json', content: { bytes: '{"num_hidden_layers":2}' } },
              { path: 'model.safetensors', content: { seed: 'llm', size: WEIGHTS } },
              { path: 'tokenizer/tokenizer.json', content: { bytes: '{}' } },
              { path: 'original/consolidated.pth', content: { seed: 'orig', size: 4096 } },
              ...files(5),
            ],
          },
        ],
        tags: { 'v1.0': 0 },
      },
      { id: 'acme/moving', commits: [{ files: [{ path: 'config.json', content: { bytes: '{"v":1}' } }] }] },
      { id: 'acme/private', private: true, commits: [{ files: [{ path: 'config.json', content: { bytes: '{"private":true}' } }] }] },
      { id: 'acme/gated-listed', gated: 'auto', gatedDigests: 'listed', commits: [{ files: [{ path: 'model.gguf', content: { seed: 'gl', size: 100 } }] }] },
      { id: 'acme/gated', gated: 'manual', commits: [{ files: [{ path: 'model.gguf', content: { seed: 'gated', size: 8192 } }, { path: 'README.md', content: { bytes: '# gated' } }] }] },
    ],
  });
});

afterAll(() => hub.close());
afterEach(() => hub.faults.clear());

function hf(repo: string, extra: Record<string, unknown> = {}): ModelArtifactSpec {
  return validateArtifactSpec({ source: { kind: 'huggingface', repo, endpoint: hub.url }, ...extra });
}

async function resolved(spec: ModelArtifactSpec, options = {}): Promise<ArtifactResolution> {
  const outcome = await resolveArtifact(spec, { secrets, ...options });
  if (!outcome.ok) throw new Error(`expected a resolution, got ${outcome.message}`);
  return outcome.resolution;
}

async function failed(spec: ModelArtifactSpec, options = {}): Promise<Extract<ResolveOutcome, { ok: false }>> {
  const outcome = await resolveArtifact(spec, { secrets, ...options });
  if (outcome.ok) throw new Error(`expected a failure, got ${outcome.resolution.manifest.digest}`);
  return outcome;
}

/** Download a file as the node cache would and verify it against its manifest line. */
async function verifies(file: ArtifactResolution['files'][number], token?: string): Promise<boolean> {
  const { url, headers } = downloadRequest(file.download, token);
  const res = await fetch(url, { headers });
  const digester = createFileDigester(file);
  digester.update(new Uint8Array(await res.arrayBuffer()));
  return digester.matches();
}

describe('resolving a Hugging Face repository', () => {
  it('pins the revision to a commit and builds the manifest from LFS sha256 and git blob ids, over every tree page', async () => {
    hub.stats.reset();
    const r = await resolved(hf('acme/llm'));
    const commit = hub.repo('acme/llm').branches.get('main');
    expect(r.commit).toBe(commit);
    expect(r.files).toHaveLength(9);
    const weights = await hub.hashesOf('acme/llm', 'main', 'model.safetensors');
    const config = await hub.hashesOf('acme/llm', 'main', 'config.json');
    expect(r.manifest.text.split('\n').slice(0, 2)).toEqual(['gpustack-manifest v1', `gitsha1:${config.gitSha1} 23 config.json`]);
    expect(r.manifest.text).toContain(`sha256:${weights.sha256} ${WEIGHTS} model.safetensors\n`);
    expect(r.manifest.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // 12 tree entries (9 files, 3 directories) in pages of 3
    expect(hub.stats.requests.filter((q) => q.url.includes('/tree/'))).toHaveLength(4);
    expect(r.files.every((f) => f.download.url.includes(`/resolve/${commit}/`))).toBe(true);
    for (const f of r.files) expect(await verifies(f)).toBe(true);
  });

  it('keeps what allowPatterns select and ignorePatterns leave, as huggingface_hub does', async () => {
    const r = await resolved(hf('acme/llm', { allowPatterns: ['*.json', '*.safetensors'], ignorePatterns: ['shards/'] }));
    expect(r.files.map((f) => f.path)).toEqual(['config.json', 'model.safetensors', 'tokenizer/tokenizer.json']);
  });

  it('resolves a tag and a commit to the same manifest as the branch at that commit, and follows a branch that moves', async () => {
    const before = await resolved(hf('acme/moving'));
    const moved = hub.pushCommit('acme/moving', { files: [{ path: 'config.json', content: { bytes: '{"v":2}' } }] });
    const after = await resolved(hf('acme/moving'));
    expect(after.commit).toBe(moved);
    expect(after.manifest.digest).not.toBe(before.manifest.digest);
    const pinned = await resolved(hf('acme/moving', { revision: before.commit }));
    expect(pinned.manifest.digest).toBe(before.manifest.digest);
    const tagged = await resolved(hf('acme/llm', { revision: 'v1.0' }));
    expect(tagged.commit).toBe(hub.repo('acme/llm').tags.get('v1.0'));
  });

  it('RevisionNotFound for a revision the repository does not have', async () => {
    const f = await failed(hf('acme/llm', { revision: 'no-such-branch' }));
    expect(f).toMatchObject({ reason: 'RevisionNotFound', retryable: false });
    expect(f.message).toBe(`RevisionNotFound: acme/llm has no revision "no-such-branch" at ${hub.url} ("Invalid rev id: no-such-branch"); name an existing branch, tag or commit`);
  });

  it('AccessDenied for a private repository without a token or with one that cannot read it', async () => {
    expect(await failed(hf('acme/private'))).toMatchObject({ reason: 'AccessDenied', message: expect.stringContaining('it is private and no token was given (set tokenFromSecret)') });
    const outsider = await failed(hf('acme/private', { tokenFromSecret: { name: 'hf-outsider', key: 'token' } }));
    expect(outsider).toMatchObject({ reason: 'AccessDenied', message: expect.stringContaining('the token in secret hf-outsider key token cannot read it') });
    const reader = await resolved(hf('acme/private', { tokenFromSecret: { name: 'hf-reader', key: 'token' } }));
    expect(reader.files[0].download.bearerToken).toBe(true);
    expect(await verifies(reader.files[0], READER)).toBe(true);
  });

  it('AccessDenied for a gated repository whose digests are masked, until the token is granted', async () => {
    const f = await failed(hf('acme/gated', { tokenFromSecret: { name: 'hf-outsider', key: 'token' } }));
    expect(f.reason).toBe('AccessDenied');
    expect(f.message).toContain('acme/gated masks the digests of 2 file(s)');
    const r = await resolved(hf('acme/gated', { tokenFromSecret: { name: 'hf-reader', key: 'token' } }));
    expect(r.manifest.files.map((x) => x.digest.split(':')[0])).toEqual(['gitsha1', 'sha256']);
    expect(await verifies(r.files[1], READER)).toBe(true);
  });

  it('AccessDenied for a gated repository that lists its digests but refuses the bytes', async () => {
    const anonymous = await failed(hf('acme/gated-listed'));
    expect(anonymous.message).toContain('acme/gated-listed is gated and an anonymous caller (no tokenFromSecret) has not been granted access');
    const outsider = await failed(hf('acme/gated-listed', { tokenFromSecret: { name: 'hf-outsider', key: 'token' } }));
    expect(outsider).toMatchObject({ reason: 'AccessDenied', message: expect.stringContaining('the token in secret hf-outsider key token has not been granted access') });
    hub.grant(OUTSIDER, 'acme/gated-listed');
    expect((await resolved(hf('acme/gated-listed', { tokenFromSecret: { name: 'hf-outsider', key: 'token' } }))).files).toHaveLength(1);
  });

  it('InvalidToken for a token the hub refuses or one that cannot be a bearer token; the value never appears', async () => {
    const wrong = await failed(hf('acme/llm', { tokenFromSecret: { name: 'hf-wrong', key: 'token' } }));
    expect(wrong).toMatchObject({ reason: 'InvalidToken', retryable: false });
    expect(wrong.message).toContain('refused the token in secret hf-wrong key token ("Invalid credentials in Authorization header")');
    expect(wrong.message).not.toContain('hf_revoked');
    const garbled = await failed(hf('acme/llm', { tokenFromSecret: { name: 'hf-garbled', key: 'token' } }));
    expect(garbled.message).toBe('InvalidToken: secret hf-garbled key token does not hold a usable bearer token (empty, over 4096 characters, or with spaces or non-ASCII characters)');
  });

  it('SecretNotFound when the secret or its key does not exist', async () => {
    const f = await failed(hf('acme/llm', { tokenFromSecret: { name: 'hf-reader', key: 'missing', namespace: 'ml' } }));
    expect(f.message).toBe('SecretNotFound: secret ml/hf-reader key missing does not exist; create it or fix tokenFromSecret');
  });

  it('EmptyManifest when the patterns select nothing', async () => {
    const f = await failed(hf('acme/llm', { allowPatterns: ['*.gguf'] }));
    expect(f.message).toBe(`EmptyManifest: no file of acme/llm on ${hub.url} at main is selected (9 listed; allowPatterns ["*.gguf"], ignorePatterns []); widen the patterns`);
  });

  it('DigestMismatch when the hub serves other content than expectedDigest pins', async () => {
    const good = await resolved(hf('acme/llm'));
    expect((await resolved(hf('acme/llm', { expectedDigest: good.manifest.digest }))).manifest.digest).toBe(good.manifest.digest);
    const pinned = `sha256:${'0'.repeat(64)}`;
    const f = await failed(hf('acme/llm', { expectedDigest: pinned }));
    expect(f.reason).toBe('DigestMismatch');
    expect(f.message).toContain(`resolved to ${good.manifest.digest} (9 files at commit ${good.commit}), but expectedDigest is ${pinned}`);
    expect(f.fallback).toBeUndefined();
  });

  it('SourceUnavailable, retryable, when the hub fails; with expectedDigest the caller may go on with it', async () => {
    hub.setFault('acme/llm', undefined, { status: 503 });
    const f = await failed(hf('acme/llm'));
    expect(f).toMatchObject({ reason: 'SourceUnavailable', retryable: true });
    expect(f.fallback).toBeUndefined();
    expect(f.message).toContain('answered 503');

    const port = await closedPort();
    const digest = `sha256:${'b'.repeat(64)}`;
    const down = await failed(validateArtifactSpec({ source: { kind: 'huggingface', repo: 'acme/llm', endpoint: `http://127.0.0.1:${port}` }, expectedDigest: digest }));
    expect(down).toMatchObject({ reason: 'SourceUnavailable', retryable: true, fallback: { manifestDigest: digest, digestSource: 'Expected' } });
    expect(down.message).toContain('ECONNREFUSED');
    expect(down.message).toContain(`until it answers, the artifact goes on with its expectedDigest ${digest}`);
  });

  it('gives up on a hub that does not answer within the request deadline', async () => {
    hub.setFault('acme/llm', undefined, { latencyMs: 2000 });
    const started = Date.now();
    const f = await failed(hf('acme/llm'), { limits: { requestTimeoutMs: 200 } });
    expect(f.message).toContain('did not answer (no answer within 200 ms); it is retried');
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('stays within its bounds: page count and response size', async () => {
    const pages = await failed(hf('acme/llm'), { limits: { maxTreePages: 2 } });
    expect(pages.message).toContain('runs past 2 pages');
    const size = await failed(hf('acme/llm'), { limits: { maxJsonBytes: 200 } });
    expect(size.message).toMatch(/over the 200-byte limit|more than the 200-byte limit/);
  });
});

describe('other sources', () => {
  it('ModelScope: sha256 of every file from its listing, downloads naming the commit', async () => {
    const spec = validateArtifactSpec({ source: { kind: 'modelscope', repo: 'acme/llm', endpoint: hub.url }, allowPatterns: ['*.safetensors', 'config.json'] });
    const r = await resolved(spec);
    const weights = await hub.hashesOf('acme/llm', 'main', 'model.safetensors');
    expect(r.manifest.files.map((f) => `${f.digest} ${f.path}`)).toEqual([
      `sha256:${(await hub.hashesOf('acme/llm', 'main', 'config.json')).sha256} config.json`,
      `sha256:${weights.sha256} model.safetensors`,
    ]);
    expect(r.commit).toBe(hub.repo('acme/llm').branches.get('main'));
    for (const f of r.files) expect(await verifies(f)).toBe(true);
    expect((await failed(validateArtifactSpec({ source: { kind: 'modelscope', repo: 'acme/llm', endpoint: hub.url }, revision: 'nope' }))).reason).toBe('RevisionNotFound');
  });

  it('URL: the digest is computed by streaming the file once, or taken from the spec with the size from HEAD', async () => {
    const url = `${hub.url}/acme/llm/resolve/main/model.safetensors`;
    const weights = await hub.hashesOf('acme/llm', 'main', 'model.safetensors');
    const streamed = await resolved(validateArtifactSpec({ source: { kind: 'url', url } }));
    expect(streamed.manifest.files).toEqual([{ path: 'model.safetensors', size: WEIGHTS, digest: `sha256:${weights.sha256}` }]);
    hub.stats.reset();
    const given = await resolved(validateArtifactSpec({ source: { kind: 'url', url, digest: `sha256:${weights.sha256}`, fileName: 'w.safetensors' } }));
    expect(given.manifest.files).toEqual([{ path: 'w.safetensors', size: WEIGHTS, digest: `sha256:${weights.sha256}` }]);
    expect(hub.stats.bytesServed('acme/llm', 'model.safetensors')).toBe(0);
  });

  it('URL: a stalled download is abandoned after the idle timeout', async () => {
    hub.setFault('acme/llm', 'model.safetensors', { stallAfterBytes: 1024 });
    const f = await failed(validateArtifactSpec({ source: { kind: 'url', url: `${hub.url}/acme/llm/resolve/main/model.safetensors` } }), { limits: { idleTimeoutMs: 300 } });
    expect(f.message).toContain('broke off after 1024 bytes (nothing for 300 ms)');
  });

  it('local: every file under the path, links followed, hashed with SHA-256', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'artifact-local-'));
    try {
      writeFileSync(join(dir, 'config.json'), '{"a":1}');
      writeFileSync(join(dir, 'blob'), 'weights');
      symlinkSync(join(dir, 'blob'), join(dir, 'model.safetensors'));
      const r = await resolved(validateArtifactSpec({ source: { kind: 'local', path: dir }, ignorePatterns: ['blob'] }));
      expect(r.manifest.files.map((f) => `${f.size} ${f.path}`)).toEqual(['7 config.json', '7 model.safetensors']);
      expect(r.files[1].download.url).toBe(`file://${join(dir, 'model.safetensors')}`);
      const missing = await failed(validateArtifactSpec({ source: { kind: 'local', path: join(dir, 'nope') } }));
      expect(missing.message).toBe(`SourceUnavailable: local path ${join(dir, 'nope')} cannot be read on this host (ENOENT)`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// The hub simulator's wire behaviour that download clients rely on, and its fault switches.
import { closeSync, ftruncateSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HubSimulator, parseRange, startHubSimulator } from './index';

const TOKEN = 'hf_wire_reader';
const OTHER = 'hf_wire_other';
const BIG = 4 * 1024 ** 3 + 1; // past 2^32: offsets and lengths that 32-bit arithmetic would get wrong
let hub: HubSimulator;
let dir: string;
let bigSha256: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'hub-wire-'));
  const sparse = join(dir, 'big.bin');
  const fd = openSync(sparse, 'w');
  ftruncateSync(fd, BIG); // a sparse file: 4 GiB of zeros that take no disk
  closeSync(fd);
  // sha256 of 4 GiB + 1 zero bytes (`head -c 4294967297 /dev/zero | sha256sum`), so the spec does not hash 4 GiB
  bigSha256 = readFileSync(join(__dirname, '__fixtures__', 'zeros-4GiB+1.sha256'), 'utf8').trim();
  hub = await startHubSimulator({
    hashCacheDir: null,
    tokens: { [TOKEN]: { canRead: ['acme/gated'] }, [OTHER]: {} },
    repos: [
      {
        id: 'acme/wire',
        commits: [
          {
            files: [
              { path: 'config.json', content: { bytes: '0123456789abcdefghij' } },
              { path: 'weights.bin', content: { seed: 'wire', size: 300_000 } },
              { path: 'big.safetensors', content: { file: sparse, sha256: bigSha256 } },
            ],
          },
        ],
      },
      { id: 'acme/history', commits: [{ files: [{ path: 'w.bin', content: { seed: 'old', size: 1000 } }] }, { files: [{ path: 'w.bin', content: { seed: 'new', size: 1000 } }] }] },
      { id: 'acme/gated', gated: 'auto', commits: [{ files: [{ path: 'w.bin', content: { seed: 'g', size: 10 } }] }] },
    ],
  });
});

afterAll(async () => {
  await hub.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => hub.faults.clear());

const url = (path: string) => `${hub.url}${path}`;

describe('resolve', () => {
  it('answers an LFS file with a redirect to the CDN carrying the linked etag, size and commit', async () => {
    const commit = hub.repo('acme/wire').branches.get('main');
    const head = await fetch(url('/acme/wire/resolve/main/weights.bin'), { method: 'HEAD', redirect: 'manual' });
    const { sha256 } = await hub.hashesOf('acme/wire', 'main', 'weights.bin');
    expect(head.status).toBe(302);
    expect(head.headers.get('x-linked-etag')).toBe(`"${sha256}"`);
    expect(head.headers.get('x-linked-size')).toBe('300000');
    expect(head.headers.get('x-repo-commit')).toBe(commit);
    expect(head.headers.get('etag')).toMatch(/^"[0-9a-f]{40}"$/);
    expect(head.headers.get('location')).toContain(`/cdn-lfs/${sha256}?`);
    expect(head.headers.get('x-xet-hash')).toBeNull();
    const cdn = await fetch(head.headers.get('location') as string, { headers: { Range: 'bytes=299990-' } });
    expect(cdn.status).toBe(206);
    expect(cdn.headers.get('content-range')).toBe('bytes 299990-299999/300000');
    expect((await cdn.arrayBuffer()).byteLength).toBe(10);
  });

  it('serves the LFS object of an older commit after the path changed', async () => {
    const [first, second] = hub.repo('acme/history').commits;
    const old = await fetch(url(`/acme/history/resolve/${first.id}/w.bin`));
    const now = await fetch(url(`/acme/history/resolve/${second.id}/w.bin`));
    const oldHash = await hub.hashesOf('acme/history', first.id, 'w.bin');
    expect(old.headers.get('etag')).toBe(`"${oldHash.sha256}"`);
    expect(Buffer.from(await old.arrayBuffer()).equals(Buffer.from(await now.arrayBuffer()))).toBe(false);
  });

  it('serves a file kept in git directly, with its blob id as ETag, Range and 416', async () => {
    const full = await fetch(url('/acme/wire/resolve/main/config.json'));
    expect(full.status).toBe(200);
    expect(full.headers.get('etag')).toBe(`"${(await hub.hashesOf('acme/wire', 'main', 'config.json')).gitSha1}"`);
    expect(await full.text()).toBe('0123456789abcdefghij');
    const part = await fetch(url('/acme/wire/resolve/main/config.json'), { headers: { Range: 'bytes=10-12' } });
    expect([part.status, part.headers.get('content-range'), await part.text()]).toEqual([206, 'bytes 10-12/20', 'abc']);
    const suffix = await fetch(url('/acme/wire/resolve/main/config.json'), { headers: { Range: 'bytes=-3' } });
    expect(await suffix.text()).toBe('hij');
    const beyond = await fetch(url('/acme/wire/resolve/main/config.json'), { headers: { Range: 'bytes=20-' } });
    expect([beyond.status, beyond.headers.get('content-range')]).toEqual([416, 'bytes */20']);
  });

  it('serves ranges past 4 GiB of a sparse multi-GB file without holding it', async () => {
    const head = await fetch(url('/acme/wire/resolve/main/big.safetensors'), { method: 'HEAD', redirect: 'manual' });
    expect(head.headers.get('x-linked-size')).toBe(String(BIG));
    expect(head.headers.get('x-linked-etag')).toBe(`"${bigSha256}"`);
    const rss = process.memoryUsage().rss;
    const tail = await fetch(head.headers.get('location') as string, { headers: { Range: `bytes=${BIG - 64 * 1024 ** 2}-` } });
    expect(tail.headers.get('content-range')).toBe(`bytes ${BIG - 64 * 1024 ** 2}-${BIG - 1}/${BIG}`);
    let n = 0;
    for await (const chunk of tail.body as unknown as AsyncIterable<Uint8Array>) n += chunk.length;
    expect(n).toBe(64 * 1024 ** 2);
    expect(process.memoryUsage().rss - rss).toBeLessThan(256 * 1024 ** 2);
  });

  it('says what is missing with X-Error-Code and X-Error-Message', async () => {
    const cases: [string, RequestInit, number, string][] = [
      ['/acme/nope/resolve/main/x', {}, 401, 'RepoNotFound'],
      ['/acme/nope/resolve/main/x', { headers: { Authorization: `Bearer ${OTHER}` } }, 404, 'RepoNotFound'],
      ['/acme/wire/resolve/v9/config.json', {}, 404, 'RevisionNotFound'],
      ['/acme/wire/resolve/main/absent.json', {}, 404, 'EntryNotFound'],
      ['/acme/gated/resolve/main/w.bin', {}, 401, 'GatedRepo'],
      ['/acme/gated/resolve/main/w.bin', { headers: { Authorization: `Bearer ${OTHER}` } }, 403, 'GatedRepo'],
      ['/api/models/acme/wire/tree/main/nowhere', {}, 404, 'EntryNotFound'],
    ];
    for (const [path, init, status, code] of cases) {
      const res = await fetch(url(path), init);
      expect([path, res.status, res.headers.get('x-error-code')]).toEqual([path, status, code]);
      expect(res.headers.get('x-error-message')).toBeTruthy();
    }
    const granted = await fetch(url('/acme/gated/resolve/main/w.bin'), { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(granted.status).toBe(200);
    const bad = await fetch(url('/api/models/acme/wire'), { headers: { Authorization: 'Bearer hf_unknown' } });
    expect([bad.status, bad.headers.get('x-error-message')]).toEqual([401, 'Invalid credentials in Authorization header']);
  });
});

describe('fault switches', () => {
  const get = (path = 'weights.bin', init: RequestInit = {}) => fetch(url(`/acme/wire/resolve/main/${path}`), init);

  it('corrupts exactly the chosen range while the headers still claim the right content', async () => {
    const good = Buffer.from(await (await get()).arrayBuffer());
    hub.setFault('acme/wire', 'weights.bin', { corrupt: { offset: 1000, length: 4 } });
    const bad = Buffer.from(await (await get()).arrayBuffer());
    const differing = [...bad.keys()].filter((i) => bad[i] !== good[i]);
    expect(differing).toEqual([1000, 1001, 1002, 1003]);
  });

  it('throttles to bytesPerSecond and can be lifted mid-download', async () => {
    hub.setFault('acme/wire', 'weights.bin', { bytesPerSecond: 100_000 });
    const started = Date.now();
    const res = await get('weights.bin', { headers: { Range: 'bytes=0-49999' } });
    await res.arrayBuffer();
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);

    const slow = await get();
    const reader = (slow.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    hub.setFault('acme/wire', 'weights.bin', undefined);
    const lifted = Date.now();
    for (;;) if ((await reader.read()).done) break;
    expect(Date.now() - lifted).toBeLessThan(1000);
  });

  it('stalls after N bytes with the connection left open', async () => {
    hub.setFault('acme/wire', 'weights.bin', { stallAfterBytes: 5000 });
    const res = await get();
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let n = 0;
    const outcome = await Promise.race([
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return 'ended';
          n += value.length;
        }
      })(),
      new Promise((resolve) => setTimeout(() => resolve('stalled'), 300)),
    ]);
    expect([outcome, n]).toEqual(['stalled', 5000]);
    await reader.cancel();
  });

  it('answers a forced status for a repository or one file', async () => {
    hub.setFault('acme/wire', 'config.json', { status: 500 });
    expect((await get('config.json')).status).toBe(500);
    expect((await fetch(url('/api/models/acme/wire/revision/main'))).status).toBe(200);
    hub.setFault('acme/wire', undefined, { status: 403 });
    expect((await fetch(url('/api/models/acme/wire/revision/main'))).status).toBe(403);
  });

  it('counts the file bytes it serves, per file and range', async () => {
    hub.stats.reset();
    await (await get('config.json', { headers: { Range: 'bytes=0-4' } })).arrayBuffer();
    await (await get('config.json')).arrayBuffer();
    expect(hub.stats.bytesServed('acme/wire', 'config.json')).toBe(25);
    expect(hub.stats.rangesServed('acme/wire', 'config.json')).toEqual([
      [0, 4],
      [0, 19],
    ]);
  });
});

describe('listing', () => {
  it('gives revision info with blobs, and paths-info in JSON and form encodings', async () => {
    const info = (await (await fetch(url('/api/models/acme/wire/revision/main?blobs=true'))).json()) as { sha: string; siblings: { rfilename: string; size: number; blobId: string; lfs?: { sha256: string; size: number; pointerSize: number } }[] };
    expect(info.sha).toBe(hub.repo('acme/wire').branches.get('main'));
    const weights = info.siblings.find((s) => s.rfilename === 'weights.bin');
    expect(weights).toEqual({ rfilename: 'weights.bin', size: 300_000, blobId: expect.stringMatching(/^[0-9a-f]{40}$/), lfs: { sha256: (await hub.hashesOf('acme/wire', 'main', 'weights.bin')).sha256, size: 300_000, pointerSize: expect.any(Number) } });
    const viaJson = await fetch(url('/api/models/acme/wire/paths-info/main'), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ paths: ['config.json', 'absent'] }) });
    expect(((await viaJson.json()) as { path: string }[]).map((e) => e.path)).toEqual(['config.json']);
    const viaForm = await fetch(url('/api/models/acme/wire/paths-info/main'), { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'paths=weights.bin&expand=True' });
    expect(await viaForm.json()).toEqual([expect.objectContaining({ path: 'weights.bin', lastCommit: expect.objectContaining({ id: info.sha }) })]);
  });
});

describe('parseRange', () => {
  it('reads the single-range forms and refuses what cannot be satisfied', () => {
    expect(parseRange('bytes=0-0', 10)).toEqual([0, 0]);
    expect(parseRange('bytes=5-', 10)).toEqual([5, 9]);
    expect(parseRange('bytes=-4', 10)).toEqual([6, 9]);
    expect(parseRange('bytes=8-100', 10)).toEqual([8, 9]);
    expect(parseRange('bytes=10-', 10)).toBe('unsatisfiable');
    expect(parseRange('bytes=5-2', 10)).toBe('unsatisfiable');
    expect(parseRange('bytes=0-1,4-5', 10)).toBeUndefined();
    expect(parseRange(undefined, 10)).toBeUndefined();
  });
});

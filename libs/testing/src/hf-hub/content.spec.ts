import { ContentSource, HashCache } from './content';
import { HubRepo } from './repos';

async function bytesOf(source: ContentSource, start?: number, end?: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of source.read(start, end)) chunks.push(c);
  return Buffer.concat(chunks);
}

describe('generated content', () => {
  it('is the same for the same seed and size, different for another seed, and any range reads the same bytes as the whole', async () => {
    const a = new ContentSource({ seed: 's', size: 200_000 });
    const whole = await bytesOf(a);
    expect(whole.equals(await bytesOf(new ContentSource({ seed: 's', size: 200_000 })))).toBe(true);
    expect(whole.equals(await bytesOf(new ContentSource({ seed: 't', size: 200_000 })))).toBe(false);
    expect((await bytesOf(a, 65_530, 131_080)).equals(whole.subarray(65_530, 131_080))).toBe(true);
    // every 64 KiB block starts with its index, so a range served from the wrong offset shows
    expect(whole.readBigUInt64LE(2 * 65_536)).toBe(2n);
  });

  it('hashes once per content and takes a given sha256 as is', async () => {
    const cache = new HashCache();
    const a = new ContentSource({ bytes: 'hello\n' });
    expect(await a.gitBlobSha1(cache)).toBe('ce013625030ba8dba906f756967f9e9ca394464a');
    expect(await a.sha256(cache)).toBe('5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03');
    expect(await new ContentSource({ seed: 'x', size: 10, sha256: 'f'.repeat(64) }).sha256(cache)).toBe('f'.repeat(64));
    expect(() => new ContentSource({ seed: 'x', size: 10, sha256: 'nope' })).toThrow('content.sha256 must be 64 lowercase hex digits');
  });
});

describe('simulated repositories', () => {
  it('give stable commit ids, keep the last commit of a file across commits that do not touch it, and resolve refs', () => {
    const spec = {
      id: 'acme/r',
      commits: [
        { files: [{ path: 'a.json', content: { bytes: '1' } }, { path: 'b.json', content: { bytes: '1' } }] },
        { files: [{ path: 'a.json', content: { bytes: '1' } }, { path: 'b.json', content: { bytes: '2' } }] },
      ],
      tags: { v1: 0 },
    };
    const repo = new HubRepo(spec);
    expect(new HubRepo(spec).commits.map((c) => c.id)).toEqual(repo.commits.map((c) => c.id));
    const head = repo.resolveRevision('HEAD');
    expect(head?.id).toBe(repo.commits[1].id);
    expect(head?.files.get('a.json')?.lastCommit.id).toBe(repo.commits[0].id);
    expect(head?.files.get('b.json')?.lastCommit.id).toBe(repo.commits[1].id);
    expect(repo.resolveRevision('v1')?.id).toBe(repo.commits[0].id);
    expect(repo.resolveRevision(repo.commits[0].id)?.id).toBe(repo.commits[0].id);
    expect(repo.resolveRevision('nope')).toBeUndefined();
    expect(() => new HubRepo({ id: 'acme/x', commits: [{ files: [{ path: '../x', content: { bytes: '' } }] }] })).toThrow('invalid file path "../x"');
  });
});

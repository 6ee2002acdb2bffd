import { createBlobHasher } from './hashing';
import { validateCacheManifest, type CacheManifest } from './manifest';

const hex64 = 'a'.repeat(64);
const good: CacheManifest = {
  digest: `sha256:${hex64}`,
  files: [
    { path: 'model.safetensors', size: 10, digest: { alg: 'sha256', hex: hex64 }, sources: [{ url: 'https://hub.example/acme/m/resolve/abc/model.safetensors' }] },
    { path: 'tokenizer/vocab.json', size: 3, digest: { alg: 'gitsha1', hex: 'b'.repeat(40) }, sources: [] },
  ],
};

describe('validateCacheManifest', () => {
  it('accepts a manifest of sha256 and git blob files', () => {
    expect(() => validateCacheManifest(good)).not.toThrow();
  });

  it.each([
    ['a path that climbs out of the tree', { path: '../etc/passwd' }, /files\[0\]\.path: expected a path without empty, "\." or "\.\." segments/],
    ['an absolute path', { path: '/etc/passwd' }, /files\[0\]\.path: expected a relative/],
    ['a negative size', { size: -1 }, /files\[0\]\.size: expected a non-negative integer/],
    ['an unknown algorithm', { digest: { alg: 'md5', hex: hex64 } }, /files\[0\]\.digest\.alg: expected "sha256" or "gitsha1", got "md5"/],
    ['a short sha256', { digest: { alg: 'sha256', hex: 'abc' } }, /files\[0\]\.digest\.hex: expected 64 lowercase hex digits for sha256/],
    ['a non-http source', { sources: [{ url: 'file:///etc/passwd' }] }, /files\[0\]\.sources\[0\]\.url: expected an http: or https: URL, or a file:\/\/\/ URL below one of the cache's localRoots \(none configured\), got file:\/\/\/etc\/passwd/],
  ])('refuses %s, naming the field', (_name, patch, message) => {
    const m = { ...good, files: [{ ...good.files[0], ...patch } as CacheManifest['files'][number], good.files[1]] };
    expect(() => validateCacheManifest(m)).toThrow(message);
  });

  it('refuses a repeated path and a path that is both a file and a directory', () => {
    expect(() => validateCacheManifest({ ...good, files: [good.files[0], good.files[0]] })).toThrow(/is repeated/);
    expect(() => validateCacheManifest({ ...good, files: [good.files[1], { ...good.files[0], path: 'tokenizer' }] })).toThrow(/"tokenizer" to be either a file or a directory/);
  });

  it('refuses a manifest digest that is not sha256 and an empty file list', () => {
    expect(() => validateCacheManifest({ ...good, digest: 'md5:abc' })).toThrow(/^INVALID_MANIFEST: digest: expected "sha256:"/);
    expect(() => validateCacheManifest({ ...good, files: [] })).toThrow(/files: expected a non-empty list/);
  });
});

describe('createBlobHasher', () => {
  it('computes git blob ids for gitsha1 (what `git hash-object` prints)', () => {
    // git hash-object of "hello\n" and of an empty file
    expect(createBlobHasher('gitsha1', 6).update('hello\n').digest('hex')).toBe('ce013625030ba8dba906f756967f9e9ca394464a');
    expect(createBlobHasher('gitsha1', 0).digest('hex')).toBe('e69de29bb2d1d6434b8b29ae775ad8c2e48c5391');
  });
});

import { createHash } from 'node:crypto';
import { buildManifest, createFileDigester, ManifestFile, parseManifest } from './manifest';

const A = `sha256:${'a'.repeat(64)}`;
const G = `gitsha1:${'1'.repeat(40)}`;

describe('the gpustack-manifest v1 format', () => {
  it('encodes one line per file sorted by the UTF-8 bytes of the path, and digests those bytes', () => {
    const files: ManifestFile[] = [
      { path: 'tokenizer/vocab.json', size: 5, digest: G },
      { path: 'été.bin', size: 2, digest: A },
      { path: 'Z.json', size: 1, digest: G },
      { path: 'a b.txt', size: 0, digest: A },
    ];
    const m = buildManifest(files);
    const expected = `gpustack-manifest v1\n${G} 1 Z.json\n${A} 0 a b.txt\n${G} 5 tokenizer/vocab.json\n${A} 2 été.bin\n`;
    expect(m.text).toBe(expected);
    expect(m.digest).toBe(`sha256:${createHash('sha256').update(Buffer.from(expected, 'utf8')).digest('hex')}`);
    expect(m.totalSize).toBe(8);
    expect(buildManifest([...files].reverse()).digest).toBe(m.digest);
  });

  it('refuses a duplicate path, an escaping path and a digest of an unknown algorithm', () => {
    expect(() => buildManifest([{ path: 'a', size: 1, digest: A }, { path: 'a', size: 1, digest: A }])).toThrow('INVALID_MANIFEST: path "a" is listed twice');
    expect(() => buildManifest([{ path: '../etc/passwd', size: 1, digest: A }])).toThrow(/"\.\." segment/);
    expect(() => buildManifest([{ path: 'x', size: 1, digest: `md5:${'0'.repeat(32)}` }])).toThrow(/malformed digest "md5:/);
    expect(() => buildManifest([{ path: 'x', size: -1, digest: A }])).toThrow(/invalid size -1/);
  });

  it('parses its own encoding back and names the line it cannot read', () => {
    const m = buildManifest([{ path: 'b', size: 2, digest: A }, { path: 'a', size: 1, digest: G }]);
    expect(parseManifest(m.text)).toEqual(m);
    expect(() => parseManifest('gpustack-manifest v2\n')).toThrow('line 1: expected "gpustack-manifest v1"');
    expect(() => parseManifest(`gpustack-manifest v1\n${A} x a\n`)).toThrow(/line 2: expected "<alg>:<hex> <size> <path>"/);
    expect(() => parseManifest(`gpustack-manifest v1\n${A} 1 b\n${A} 1 a\n`)).toThrow(/ascending byte order/);
  });

  it('verifies a streamed file by the algorithm of its line: git blob id or SHA-256', () => {
    const hello = Buffer.from('hello\n');
    const git = createFileDigester({ path: 'h', size: 6, digest: 'gitsha1:ce013625030ba8dba906f756967f9e9ca394464a' });
    git.update(hello.subarray(0, 2));
    git.update(hello.subarray(2));
    expect(git.matches()).toBe(true);
    const sha = createFileDigester({ path: 'h', size: 6, digest: 'sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03' });
    sha.update(hello);
    expect(sha.matches()).toBe(true);
    const bad = createFileDigester({ path: 'h', size: 6, digest: 'sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03' });
    bad.update(Buffer.from('hellO\n'));
    expect(bad.matches()).toBe(false);
  });
});

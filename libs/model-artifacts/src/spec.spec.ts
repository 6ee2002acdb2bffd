import { ArtifactSpecError, assertSpecUnchanged, validateArtifactSpec } from './spec';

function problems(input: unknown): string[] {
  try {
    validateArtifactSpec(input);
  } catch (err) {
    if (err instanceof ArtifactSpecError) return err.problems.map((p) => p.field);
    throw err;
  }
  return [];
}

describe('ModelArtifact spec validation', () => {
  it('fills in the default endpoint and revision of each hub kind', () => {
    expect(validateArtifactSpec({ source: { kind: 'huggingface', repo: 'Qwen/Qwen3-8B' } })).toEqual({
      source: { kind: 'huggingface', repo: 'Qwen/Qwen3-8B', endpoint: 'https://huggingface.co' },
      revision: 'main',
      allowPatterns: [],
      ignorePatterns: [],
    });
    expect(validateArtifactSpec({ source: { kind: 'modelscope', repo: 'Qwen/Qwen3-8B' } }).revision).toBe('master');
    expect(validateArtifactSpec({ source: { kind: 'huggingface', repo: 'gpt2', endpoint: 'http://mirror.local:8080/' } }).source).toEqual({ kind: 'huggingface', repo: 'gpt2', endpoint: 'http://mirror.local:8080' });
  });

  it('names every bad field at once, with what was expected', () => {
    expect(() =>
      validateArtifactSpec({
        source: { kind: 'huggingface', repo: 'a/b/c', endpoint: 'ftp://x' },
        revision: 'main branch',
        allowPatterns: ['*.json', ''],
        expectedDigest: 'sha256:XYZ',
        tokenFromSecret: { name: 'HF', key: '' },
        colour: 'blue',
      }),
    ).toThrow(
      'INVALID_ARTIFACT_SPEC: colour: unknown field (expected one of source, revision, allowPatterns, ignorePatterns, expectedDigest, tokenFromSecret); ' +
        'source.repo: expected "org/name" (or a legacy single name) of letters, digits, "-", "_" and ".", got "a/b/c"; ' +
        'source.endpoint: expected an http:// or https:// URL, got a ftp: URL; revision: "main branch" is not a valid git ref or commit id; ' +
        'allowPatterns[1]: expected a non-empty glob pattern; expectedDigest: expected "sha256:" and 64 lowercase hex digits (a manifest digest); ' +
        'tokenFromSecret.name: expected a Secret name (lowercase letters, digits, "-" and "."); tokenFromSecret.key: expected a key of the Secret (letters, digits, "-", "_" and ".")',
    );
  });

  it('refuses what a source kind cannot use', () => {
    expect(problems({ source: { kind: 'url', url: 'https://x/y.gguf' }, revision: 'main', allowPatterns: ['*'] })).toEqual(['revision', 'allowPatterns']);
    expect(problems({ source: { kind: 'local', path: '/models/x' }, tokenFromSecret: { name: 'hf', key: 'token' } })).toEqual(['tokenFromSecret']);
    expect(problems({ source: { kind: 'local', path: 'models/x' } })).toEqual(['source.path']);
    expect(problems({ source: { kind: 'git', repo: 'a/b' } })).toEqual(['source.kind']);
    expect(problems({ source: { kind: 'url', url: 'https://user:pw@host/file' } })).toEqual(['source.url']);
    expect(problems({ source: { kind: 'url', url: 'https://host/f', digest: 'sha256:00', size: -1, fileName: 'a/b' } })).toEqual(['source.digest', 'source.size', 'source.fileName']);
    expect(problems('nope')).toEqual(['spec']);
  });

  it('accepts a url source with its digest and size, and a local path', () => {
    const digest = `sha256:${'0'.repeat(64)}`;
    expect(validateArtifactSpec({ source: { kind: 'url', url: 'https://host/m.gguf', digest, size: 10 } }).source).toEqual({ kind: 'url', url: 'https://host/m.gguf', digest, size: 10 });
    expect(validateArtifactSpec({ source: { kind: 'local', path: '/models/llama/' } }).source).toEqual({ kind: 'local', path: '/models/llama' });
  });

  it('names each field an update would change: the spec is immutable', () => {
    const a = validateArtifactSpec({ source: { kind: 'huggingface', repo: 'org/m' }, allowPatterns: ['*.json'] });
    const b = validateArtifactSpec({ source: { kind: 'huggingface', repo: 'org/m', endpoint: 'http://mirror' }, revision: 'v2', allowPatterns: ['*.json'] });
    expect(() => assertSpecUnchanged(a, b)).toThrow('IMMUTABLE_FIELD: source.endpoint, revision cannot change once the artifact exists; create a new artifact instead');
    expect(() => assertSpecUnchanged(a, validateArtifactSpec({ allowPatterns: ['*.json'], source: { repo: 'org/m', kind: 'huggingface' } }))).not.toThrow();
  });
});

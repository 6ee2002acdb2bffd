import { ArtifactSourceKind } from '@gpufleet/contracts';
import { createArtifactRequestFromFlags } from './artifact-flags';

describe('gpufleet create artifact flags', () => {
  it('turns --hf with a revision, globs, a token secret and --pin into the request', () => {
    const { spec } = createArtifactRequestFromFlags('llama', {
      namespace: 'team-a',
      hf: 'meta-llama/Llama-3.1-8B',
      endpoint: 'http://hub.internal:8080',
      revision: 'v1.0',
      allow: ['*.safetensors', 'config.json'],
      ignore: ['original/*'],
      tokenSecret: 'hf-token/token',
      pin: true,
      prefetch: ['gpu-0', 'gpu-1'],
    });
    expect(spec).toMatchObject({
      name: 'llama',
      namespace: 'team-a',
      source: { kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE, repo: 'meta-llama/Llama-3.1-8B', endpoint: 'http://hub.internal:8080', url: '', path: '' },
      revision: 'v1.0',
      allowPatterns: ['*.safetensors', 'config.json'],
      ignorePatterns: ['original/*'],
      tokenFromSecret: { name: 'hf-token', key: 'token' },
      pinned: true,
      prefetch: ['gpu-0', 'gpu-1'],
    });
  });

  it('takes a URL or a path as the source, with no repository', () => {
    expect(createArtifactRequestFromFlags('m', { namespace: 'default', url: 'https://example.com/m.gguf' }).spec?.source).toEqual({
      kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_URL,
      repo: '',
      endpoint: '',
      url: 'https://example.com/m.gguf',
      path: '',
    });
    expect(createArtifactRequestFromFlags('m', { namespace: 'default', path: '/models/m' }).spec?.source?.kind).toBe(ArtifactSourceKind.ARTIFACT_SOURCE_KIND_LOCAL);
  });

  it('refuses no source, two sources, an endpoint without a hub and a token secret without a key, naming the flags', () => {
    expect(() => createArtifactRequestFromFlags('m', { namespace: 'default' })).toThrow('give exactly one source, --hf ORG/NAME, --modelscope ORG/NAME, --url URL or --path DIR; got none');
    expect(() => createArtifactRequestFromFlags('m', { namespace: 'default', hf: 'a/b', url: 'http://x/y' })).toThrow('got --hf and --url');
    expect(() => createArtifactRequestFromFlags('m', { namespace: 'default', path: '/m', endpoint: 'http://hub' })).toThrow('--endpoint names a hub; it goes with --hf or --modelscope, not --path');
    expect(() => createArtifactRequestFromFlags('m', { namespace: 'default', hf: 'a/b', tokenSecret: 'hf-token' })).toThrow('--token-secret hf-token: expected SECRET/KEY');
  });
});

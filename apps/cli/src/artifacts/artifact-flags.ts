import { ArtifactSourceKind, type CreateArtifactRequest } from '@gpufleet/contracts';

export interface ArtifactFlags {
  namespace: string;
  hf?: string;
  modelscope?: string;
  url?: string;
  path?: string;
  endpoint?: string;
  revision?: string;
  allow?: string[];
  ignore?: string[];
  expectedDigest?: string;
  tokenSecret?: string;
  pin?: boolean;
  /** Nodes to fetch it to at once (`*`: every node). */
  prefetch?: string[];
}

/**
 * `gpufleet create artifact NAME --hf org/name …` as a CreateArtifactRequest. Exactly one source
 * flag; the rest of the checks (names, globs, digests) are the service's, so the CLI and every
 * other client get the same precise errors.
 */
export function createArtifactRequestFromFlags(name: string, flags: ArtifactFlags): CreateArtifactRequest {
  const sources = (
    [
      ['--hf', flags.hf, ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE],
      ['--modelscope', flags.modelscope, ArtifactSourceKind.ARTIFACT_SOURCE_KIND_MODELSCOPE],
      ['--url', flags.url, ArtifactSourceKind.ARTIFACT_SOURCE_KIND_URL],
      ['--path', flags.path, ArtifactSourceKind.ARTIFACT_SOURCE_KIND_LOCAL],
    ] as const
  ).filter(([, value]) => value !== undefined);
  if (sources.length !== 1) {
    throw new Error(`create artifact: give exactly one source, --hf ORG/NAME, --modelscope ORG/NAME, --url URL or --path DIR; got ${sources.length === 0 ? 'none' : sources.map(([flag]) => flag).join(' and ')}`);
  }
  const [flag, value, kind] = sources[0];
  const hub = kind === ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE || kind === ArtifactSourceKind.ARTIFACT_SOURCE_KIND_MODELSCOPE;
  if (flags.endpoint && !hub) throw new Error(`create artifact: --endpoint names a hub; it goes with --hf or --modelscope, not ${flag}`);
  let tokenFromSecret: { name: string; key: string } | undefined;
  if (flags.tokenSecret !== undefined) {
    const slash = flags.tokenSecret.indexOf('/');
    if (slash <= 0 || slash === flags.tokenSecret.length - 1) throw new Error(`--token-secret ${flags.tokenSecret}: expected SECRET/KEY, e.g. hf-token/token`);
    tokenFromSecret = { name: flags.tokenSecret.slice(0, slash), key: flags.tokenSecret.slice(slash + 1) };
  }
  return {
    spec: {
      name,
      namespace: flags.namespace,
      source: {
        kind,
        repo: hub ? value! : '',
        endpoint: flags.endpoint ?? '',
        url: kind === ArtifactSourceKind.ARTIFACT_SOURCE_KIND_URL ? value! : '',
        path: kind === ArtifactSourceKind.ARTIFACT_SOURCE_KIND_LOCAL ? value! : '',
      },
      revision: flags.revision ?? '',
      allowPatterns: flags.allow ?? [],
      ignorePatterns: flags.ignore ?? [],
      expectedDigest: flags.expectedDigest ?? '',
      tokenFromSecret,
      pinned: Boolean(flags.pin),
      labels: {},
      prefetch: flags.prefetch ?? [],
    },
  };
}

import { ArtifactSourceKind, type ModelArtifactSpec } from '@gpufleet/contracts';
import { ArtifactSpecError, validateArtifactSpec, type ArtifactSource, type ModelArtifactSpec as LibSpec } from '@gpufleet/model-artifacts';
import { isDns1123Label, problem, shown, type ValidationProblem } from '@gpufleet/scheduling-core';

/** Labels and prefetch nodes: bounded, like the other objects of the API. */
const MAX_LABELS = 64;
const MAX_PREFETCH = 1000;
const NODE_NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;

/** Endpoints an artifact without its own `source.endpoint` is resolved against (HF_ENDPOINT, MODELSCOPE_ENDPOINT). */
export interface DefaultEndpoints {
  readonly huggingface: string;
  readonly modelscope: string;
}

/**
 * The API's spec as the resolver library takes it: enum kinds to names, empty strings to absent,
 * the hub endpoint defaulted. Only `source` fields of the kind are carried, so a stray field of
 * another kind is ignored rather than half-applied.
 */
export function librarySpecOf(spec: ModelArtifactSpec, endpoints: DefaultEndpoints): unknown {
  const s = spec.source;
  let source: Partial<ArtifactSource> | undefined;
  switch (s?.kind) {
    case ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE:
      source = { kind: 'huggingface', repo: s.repo, endpoint: (s.endpoint || endpoints.huggingface).replace(/\/+$/, '') };
      break;
    case ArtifactSourceKind.ARTIFACT_SOURCE_KIND_MODELSCOPE:
      source = { kind: 'modelscope', repo: s.repo, endpoint: (s.endpoint || endpoints.modelscope).replace(/\/+$/, '') };
      break;
    case ArtifactSourceKind.ARTIFACT_SOURCE_KIND_URL:
      source = { kind: 'url', url: s.url };
      break;
    case ArtifactSourceKind.ARTIFACT_SOURCE_KIND_LOCAL:
      source = { kind: 'local', path: s.path };
      break;
  }
  return {
    ...(source ? { source } : {}),
    ...(spec.revision ? { revision: spec.revision } : {}),
    allowPatterns: spec.allowPatterns,
    ignorePatterns: spec.ignorePatterns,
    ...(spec.expectedDigest ? { expectedDigest: spec.expectedDigest } : {}),
    ...(spec.tokenFromSecret?.name || spec.tokenFromSecret?.key ? { tokenSecretRef: { name: spec.tokenFromSecret.name, key: spec.tokenFromSecret.key, namespace: spec.namespace } } : {}),
  };
}

/** The validated library spec; throws ArtifactSpecError (the caller checked it with artifactSpecProblems first). */
export function validLibrarySpec(spec: ModelArtifactSpec, endpoints: DefaultEndpoints): LibSpec {
  return validateArtifactSpec(librarySpecOf(spec, endpoints));
}

/** Every problem of a CreateArtifact spec, each naming its field (`spec.source.repo`, `spec.prefetch[2]`). */
export function artifactSpecProblems(spec: ModelArtifactSpec | undefined, endpoints: DefaultEndpoints): ValidationProblem[] {
  if (!spec) return [problem('spec', 'a ModelArtifactSpec', 'none')];
  const problems: ValidationProblem[] = [];
  if (!isDns1123Label(spec.name)) problems.push(problem('spec.name', 'a DNS-1123 label (lower-case letters, digits and "-", at most 63)', shown(spec.name)));
  if (!isDns1123Label(spec.namespace)) problems.push(problem('spec.namespace', 'a DNS-1123 label (lower-case letters, digits and "-", at most 63)', shown(spec.namespace)));
  if (!spec.source || spec.source.kind === ArtifactSourceKind.ARTIFACT_SOURCE_KIND_UNSPECIFIED) {
    problems.push(problem('spec.source.kind', 'one of HUGGINGFACE, MODELSCOPE, URL, LOCAL', 'none'));
  } else {
    try {
      validateArtifactSpec(librarySpecOf(spec, endpoints));
    } catch (err) {
      if (!(err instanceof ArtifactSpecError)) throw err;
      for (const p of err.problems) {
        const field = `spec.${p.field === 'tokenSecretRef' ? 'tokenFromSecret' : p.field.replace(/^tokenSecretRef\./, 'tokenFromSecret.')}`;
        problems.push({ field, expected: p.message, got: '', message: `${field}: ${p.message}` });
      }
    }
  }
  const labels = Object.entries(spec.labels);
  if (labels.length > MAX_LABELS) problems.push(problem('spec.labels', `at most ${MAX_LABELS} labels`, String(labels.length)));
  for (const [key] of labels) if (key.startsWith('gpufleet.io/')) problems.push(problem(`spec.labels[${JSON.stringify(key)}]`, 'a key outside gpufleet.io/ (gpufleet writes those)', shown(key)));
  if (spec.prefetch.length > MAX_PREFETCH) problems.push(problem('spec.prefetch', `at most ${MAX_PREFETCH} nodes`, String(spec.prefetch.length)));
  spec.prefetch.slice(0, MAX_PREFETCH).forEach((node, i) => {
    if (node !== '*' && !NODE_NAME.test(node)) problems.push(problem(`spec.prefetch[${i}]`, 'a node name or "*" (every node)', shown(node)));
  });
  return problems;
}

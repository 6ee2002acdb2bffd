import { Inject, Injectable } from '@nestjs/common';
import type { ArtifactFile, ModelArtifactSpec } from '@gpufleet/contracts';
import { resolveArtifact, type SecretLookup } from '@gpufleet/model-artifacts';
import { DELIVERY_CONFIG, DeliveryConfig } from '../config';
import { validLibrarySpec } from './spec';

/** A resolution that did not give a manifest, with the reason the artifact's status shows. */
export class ResolveFailure extends Error {
  constructor(
    readonly reason: string,
    message: string,
    /** Set when the source is down and the spec pins expectedDigest: the artifact keeps going with it. */
    readonly fallbackDigest?: string,
  ) {
    super(message);
  }
}

/** Reasons that a later try can cure without a change to the spec or the source. */
export const RETRYABLE_REASONS: ReadonlySet<string> = new Set(['SourceUnavailable']);

export interface ResolvedArtifact {
  readonly commit: string;
  /** "sha256:<hex>" of `text`. */
  readonly digest: string;
  /** The gpustack-manifest v1 text. */
  readonly text: string;
  readonly files: ArtifactFile[];
}

/**
 * The control role's resolver: the model-artifacts library against the hub (HF_ENDPOINT,
 * MODELSCOPE_ENDPOINT or the artifact's own endpoint), bounded by RESOLVE_TIMEOUT_S per request
 * and MAX_MANIFEST_FILES.
 */
@Injectable()
export class ArtifactResolver {
  constructor(@Inject(DELIVERY_CONFIG) private readonly config: DeliveryConfig) {}

  async resolve(spec: ModelArtifactSpec, secrets: SecretLookup): Promise<ResolvedArtifact> {
    const librarySpec = validLibrarySpec(spec, { huggingface: this.config.HF_ENDPOINT, modelscope: this.config.MODELSCOPE_ENDPOINT });
    const outcome = await resolveArtifact(librarySpec, {
      secrets,
      limits: { requestTimeoutMs: this.config.RESOLVE_TIMEOUT_S * 1000, idleTimeoutMs: this.config.RESOLVE_TIMEOUT_S * 1000, maxFiles: this.config.MAX_MANIFEST_FILES },
    });
    if (!outcome.ok) throw new ResolveFailure(outcome.reason, outcome.message.replace(new RegExp(`^${outcome.reason}: `), ''), outcome.fallback?.manifestDigest);
    const { manifest, files, commit } = outcome.resolution;
    return {
      commit: commit ?? '',
      digest: manifest.digest,
      text: manifest.text,
      files: files.map((f) => ({ path: f.path, size: f.size, digest: f.digest, downloadUrl: f.download.url, needsToken: f.download.bearerToken })),
    };
  }
}

const DIGEST = /^sha256:([0-9a-f]{64})$/;

/** The artifact-manifests bucket key of a manifest digest "sha256:<hex>": its hex. */
export function manifestKey(digest: string): string {
  const m = DIGEST.exec(digest);
  if (!m) throw new Error(`manifest digest ${JSON.stringify(digest)} is not "sha256:<64 hex>"`);
  return m[1];
}

// Reads a gpufleet cache the way an engine does, in its own process with HF_HUB_OFFLINE=1:
// @huggingface/hub's scanCacheDir and downloadFileToCacheDir (whose fetch throws, so any network
// use fails), and the ref -> snapshot -> file resolution huggingface_hub performs offline.
const { createHash } = require('crypto');
const { readFileSync } = require('fs');
const { join } = require('path');
const hub = require('@huggingface/hub');

async function main() {
  const [repo, revision, ...paths] = process.argv.slice(2);
  if (process.env.HF_HUB_OFFLINE !== '1') throw new Error('HF_HUB_OFFLINE must be 1');
  const cacheDir = process.env.HF_HUB_CACHE;
  const scan = await hub.scanCacheDir(cacheDir);
  const repoDir = join(cacheDir, `models--${repo.replace('/', '--')}`);
  const commit = readFileSync(join(repoDir, 'refs', revision), 'utf8');
  const noNetwork = () => {
    throw new Error('the network was used');
  };
  const files = {};
  for (const p of paths) {
    const pointer = await hub.downloadFileToCacheDir({ repo, path: p, revision: commit, cacheDir, fetch: noNetwork });
    files[p] = { pointer, sha256: createHash('sha256').update(readFileSync(pointer)).digest('hex') };
  }
  process.stdout.write(
    JSON.stringify({
      commit,
      repos: scan.repos.map((r) => ({ id: r.id, revisions: r.revisions.map((v) => ({ commitOid: v.commitOid, refs: v.refs, files: v.files.length })) })),
      warnings: scan.warnings.map(String),
      files,
    }),
  );
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err));
  process.exit(1);
});

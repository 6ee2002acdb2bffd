// Runs one delivery in its own process, so a spec can SIGKILL it mid-file.
// argv: <root> <manifest.json> <options.json>; prints one JSON line per progress report and the result.
import { readFileSync } from 'fs';
import { ModelCache } from '../cache';
import type { CacheManifest } from '../manifest';

async function main(): Promise<void> {
  const [root, manifestFile, optionsFile] = process.argv.slice(2);
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as CacheManifest;
  const options = JSON.parse(readFileSync(optionsFile, 'utf8')) as Record<string, unknown>;
  const cache = await ModelCache.open({ root, ...options });
  const result = await cache.ensure(manifest, { onProgress: (p) => process.stdout.write(`${JSON.stringify({ progress: p })}\n`) });
  process.stdout.write(`${JSON.stringify({ result })}\n`);
  await cache.close();
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});

// The hub `gpufleet up --sample-hub` runs: the hub simulator on 127.0.0.1 and a free port, serving
// the sample repositories (samples.ts), as a process of its own so that serving bytes never shares
// an event loop with the CLI or a service. `up` builds it into dist/ like the services, starts it,
// and reads where it listens from the ready file:
//
//   node dist/libs/testing/src/hf-hub/sample-hub.js --ready-file <path>
//
// The ready file (JSON, written once the hub listens, via a temporary name and a rename) is
// `{ url, repos: [{ id, commit, files, bytes }] }`. SIGTERM or SIGINT closes the hub and exits 0.
import { renameSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { sampleHubRepos } from './samples';
import { startHubSimulator } from './server';

/** What the ready file says. */
export interface SampleHubReady {
  readonly url: string;
  readonly repos: ReadonlyArray<{ readonly id: string; readonly commit: string; readonly files: number; readonly bytes: number }>;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'ready-file': { type: 'string' } }, strict: true });
  const readyFile = values['ready-file'];
  if (!readyFile) throw new Error('--ready-file: required (where to write the URL once the hub listens)');
  const specs = sampleHubRepos();
  // Every sample file is generated in memory: there is no generated content whose hash is worth keeping on disk.
  const hub = await startHubSimulator({ repos: specs, hashCacheDir: null });
  const ready: SampleHubReady = {
    url: hub.url,
    repos: specs.map((spec) => {
      const repo = hub.repo(spec.id);
      const commit = repo.commits[repo.commits.length - 1];
      return { id: spec.id, commit: commit.id, files: commit.files.size, bytes: [...commit.files.values()].reduce((n, f) => n + f.source.size, 0) };
    }),
  };
  for (const r of ready.repos) process.stdout.write(`sample hub: ${r.id} at ${r.commit} (${r.files} files, ${r.bytes} bytes)\n`);
  process.stdout.write(`sample hub listening on ${hub.url} (HF_ENDPOINT)\n`);
  const stop = (signal: string) => {
    process.stdout.write(`${signal}: sample hub stopping\n`);
    void hub.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  writeFileSync(`${readyFile}.tmp`, JSON.stringify(ready));
  renameSync(`${readyFile}.tmp`, readyFile);
}

main().catch((err: Error) => {
  process.stderr.write(`sample hub failed to start: ${err.message}\n`);
  process.exit(1);
});

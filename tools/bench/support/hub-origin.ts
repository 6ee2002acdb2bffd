// The origin of `npm run bench -- delivery`, run as a child process (fork with IPC) so that the hub
// simulator does not share an event loop with the caches it serves: generating and sending bytes
// costs CPU, and on one loop it would be charged to the downloader.
//
//   argv[2]: JSON HubOriginSpec. IPC in: { id, kind: 'bytesServed', repo }; out: { kind: 'ready', url }
//   once every file's hashes are known, { id, bytes } per question, { kind: 'failed', message }.
// It exits when the parent disconnects.
import { startHubSimulator, type HubSimulator } from '@gpufleet/testing';

export interface HubOriginSpec {
  readonly repos: ReadonlyArray<{ readonly id: string; readonly files: ReadonlyArray<{ readonly path: string; readonly seed: string; readonly size: number }> }>;
}

export type HubOriginRequest = { readonly id: number; readonly kind: 'bytesServed'; readonly repo: string };
export type HubOriginMessage = { readonly kind: 'ready'; readonly url: string } | { readonly kind: 'failed'; readonly message: string } | { readonly id: number; readonly bytes: number };

async function main(): Promise<void> {
  const send = (m: HubOriginMessage): void => {
    process.send?.(m);
  };
  let hub: HubSimulator | undefined;
  try {
    const spec = JSON.parse(process.argv[2] ?? '') as HubOriginSpec;
    hub = await startHubSimulator({
      repos: spec.repos.map((r) => ({
        id: r.id,
        commits: [{ title: 'weights', files: [{ path: 'config.json', content: { bytes: '{"num_hidden_layers":32}' } }, ...r.files.map((f) => ({ path: f.path, content: { seed: f.seed, size: f.size } }))] }],
      })),
    });
    // hashing costs seconds per GiB; the hub keeps generated content's hashes on disk, so only the first run pays
    for (const r of spec.repos) for (const f of r.files) await hub.hashesOf(r.id, 'main', f.path);
    const running = hub;
    process.on('message', (m: HubOriginRequest) => {
      if (m?.kind === 'bytesServed') send({ id: m.id, bytes: running.stats.bytesServed(m.repo) });
    });
    process.on('disconnect', () => void running.close().finally(() => process.exit(0)));
    send({ kind: 'ready', url: hub.url });
  } catch (err) {
    send({ kind: 'failed', message: (err as Error).stack ?? String(err) });
    await hub?.close();
    process.exit(1);
  }
}

void main();

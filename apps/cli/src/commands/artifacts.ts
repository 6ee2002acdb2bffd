import { ArtifactPhase, ModelArtifact, ModelDeliveryServiceClient, type WatchArtifactsResponse } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { createArtifactRequestFromFlags, type ArtifactFlags } from '../artifacts/artifact-flags';
import { cliChannelCredentials, cliClientOptions } from '../admin';
import { artifactColumns, artifactPhaseName, describeArtifact } from '../output/artifacts';
import { renderStructured, renderTable, type OutputFormat } from '../output/format';

type Out = (text: string) => void;

/** Items per page the CLI asks for, as for the scheduler's lists. */
const PAGE_SIZE = 500;

function connect(address: string): ModelDeliveryServiceClient {
  return new ModelDeliveryServiceClient(address, cliChannelCredentials(), cliClientOptions());
}

async function listAll(client: ModelDeliveryServiceClient, namespace: string): Promise<ModelArtifact[]> {
  const all: ModelArtifact[] = [];
  let pageToken = '';
  do {
    const page = await callUnary(client, client.listArtifacts, { namespace, pageSize: PAGE_SIZE, pageToken });
    all.push(...page.artifacts);
    pageToken = page.nextPageToken;
  } while (pageToken !== '');
  return all;
}

function render(items: ModelArtifact[], format: OutputFormat, single: boolean, header = true): string {
  if (format === 'json' || format === 'yaml') return renderStructured(items.map(artifactJson), format, single);
  return renderTable(items, artifactColumns, format === 'wide', header);
}

function artifactJson(a: ModelArtifact): unknown {
  return { kind: 'ModelArtifact', ...(ModelArtifact.toJSON(a) as object) };
}

/** `gpufleet get artifacts [NAME] [-w]`: prints once, or with -w the current ones and then each change (a node's progress included). */
export async function runGetArtifacts(address: string, opts: { name?: string; namespace?: string; format: OutputFormat; watch: boolean }, out: Out): Promise<void> {
  const client = connect(address);
  try {
    const namespace = opts.namespace ?? (opts.name ? 'default' : '');
    if (!opts.watch) {
      const items = opts.name ? [(await callUnary(client, client.getArtifact, { namespace, name: opts.name })).artifact!] : await listAll(client, namespace);
      if (items.length === 0 && (opts.format === 'table' || opts.format === 'wide')) out('No artifacts found.');
      else out(render(items, opts.format, Boolean(opts.name)));
      return;
    }
    // The watch begins with every artifact (ADDED), so it is the listing too.
    const stream = client.watchArtifacts({ namespace });
    const structured = opts.format === 'json' || opts.format === 'yaml';
    let header = !structured;
    await new Promise<void>((resolve, reject) => {
      process.once('SIGINT', () => {
        stream.cancel();
        resolve();
      });
      stream.on('data', (ev: WatchArtifactsResponse) => {
        const a = ev.artifact;
        if (!a?.spec || (opts.name && a.spec.name !== opts.name)) return;
        out(`${render([a], opts.format, true, header)}${ev.type === 'DELETED' ? '   (deleted)' : ''}`);
        header = false;
      });
      stream.on('error', (err: Error & { code?: number }) => (err.code === 1 ? resolve() : reject(err)));
      stream.on('end', resolve);
    });
  } finally {
    client.close();
  }
}

export async function runDescribeArtifact(address: string, namespace: string, name: string, out: Out): Promise<void> {
  const client = connect(address);
  try {
    const { artifact } = await callUnary(client, client.getArtifact, { namespace, name });
    out(describeArtifact(artifact!));
  } finally {
    client.close();
  }
}

/** `gpufleet create artifact NAME --hf org/name …`; with --wait, until it is resolved (Ready) or refused (Failed). */
export async function runCreateArtifact(address: string, name: string, flags: ArtifactFlags, wait: { wait: boolean; timeoutS: number }, out: Out): Promise<void> {
  const request = createArtifactRequestFromFlags(name, flags);
  const client = connect(address);
  const id = `${flags.namespace}/${name}`;
  try {
    await callUnary(client, client.createArtifact, request);
    out(`artifact/${id} created (resolving)`);
    if (!wait.wait) return;
    const deadline = Date.now() + wait.timeoutS * 1000;
    for (;;) {
      const { artifact } = await callUnary(client, client.getArtifact, { namespace: flags.namespace, name });
      const phase = artifact?.status?.phase;
      if (phase === ArtifactPhase.ARTIFACT_PHASE_READY) {
        out(`artifact/${id} Ready: ${artifact!.status!.fileCount} files, manifest ${artifact!.status!.manifestDigest}`);
        return;
      }
      if (phase === ArtifactPhase.ARTIFACT_PHASE_FAILED) throw new Error(`artifact/${id} Failed: ${artifact!.status!.reason}: ${artifact!.status!.message}`);
      if (Date.now() > deadline) throw new Error(`artifact/${id} still ${artifactPhaseName(phase)} after ${wait.timeoutS}s`);
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    client.close();
  }
}

export async function runDeleteArtifact(address: string, namespace: string, name: string, out: Out): Promise<void> {
  const client = connect(address);
  try {
    await callUnary(client, client.deleteArtifact, { namespace, name });
    out(`artifact/${namespace}/${name} deleted (node caches drop their copies once no pod uses them)`);
  } finally {
    client.close();
  }
}

/** `artifact`, `artifacts`, `modelartifact(s)`: the kind lives on model delivery, not on the scheduler. */
export function isArtifactKind(value: string): boolean {
  return ['artifact', 'artifacts', 'modelartifact', 'modelartifacts'].includes(value.toLowerCase());
}

export const DELIVERY_FLAG = ['--delivery <host:port>', "model delivery's gRPC address, for artifacts (default: from the stack context)"] as const;

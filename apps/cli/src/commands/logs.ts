import { status } from '@grpc/grpc-js';
import { GPUInstance, ModelDeployment } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { isLoopbackUrl } from '../admin';
import { LinePrefixer, LogSource, deploymentLogSources, instanceLogSource, logsRequestUrl } from '../logs/log-sources';
import { connectClients } from './get';

export interface LogsOptions {
  scheduler: string;
  namespace: string;
  name: string;
  replica?: number;
  role?: string;
  all?: boolean;
  follow?: boolean;
  tail?: number;
  /** An instance's sshd log instead of its command's. */
  sshd?: boolean;
  /** Where log bytes go (stdout). */
  write?: (chunk: Uint8Array | string) => Promise<void>;
  /** Notes about replicas left out (stderr). */
  note?: (text: string) => void;
}

const isNotFound = (err: unknown) => (err as { code?: number }).code === status.NOT_FOUND;

/** A deployment of that name, else an instance; NOT_FOUND naming both when neither exists. */
async function lookUp(scheduler: string, namespace: string, name: string): Promise<{ deployment?: ModelDeployment; instance?: GPUInstance }> {
  const c = connectClients(scheduler, namespace);
  try {
    try {
      const { deployment } = await callUnary(c.deployments, c.deployments.getDeployment, { namespace, name });
      if (deployment) return { deployment };
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    try {
      const { instance } = await callUnary(c.instances, c.instances.getInstance, { namespace, name });
      if (instance) return { instance };
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    throw new Error(
      `NOT_FOUND: no deployment or instance named "${name}" in namespace "${namespace}" (list them with \`gpufleet get deployments\` and \`gpufleet get instances\`)`,
    );
  } finally {
    c.close();
  }
}

/** The node runtime answers errors as `{"error": {"code", "message"}}`; anything else is shown as it is. */
export function errorBody(text: string): string {
  try {
    const { error } = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (error?.message) return `${error.code ? `${error.code}: ` : ''}${error.message}`;
  } catch {
    // not JSON
  }
  return text.trim().slice(0, 500) || '(empty body)';
}

function writeStdout(chunk: Uint8Array | string): Promise<void> {
  return new Promise((resolve) => (process.stdout.write(chunk) ? resolve() : process.stdout.once('drain', resolve)));
}

/** Fetches one log and hands its body on as it arrives; with a prefix, line by line. */
async function stream(source: LogSource, url: string, write: (c: Uint8Array | string) => Promise<void>, prefix?: string): Promise<void> {
  let res: Response;
  try {
    // Node runtimes guard their pod API with the bootstrap admin token only (not access
    // tokens). The URL comes from a status record, which anyone who can write NATS could point
    // elsewhere: the token goes only to this machine (a local stack), never to a remote address
    // over plain HTTP.
    const token = process.env.GPUFLEET_ADMIN_TOKEN;
    res = await fetch(url, token && isLoopbackUrl(url) ? { headers: { authorization: `Bearer ${token}` } } : {});
  } catch (err) {
    const cause = (err as { cause?: Error }).cause;
    throw new Error(`UNAVAILABLE: cannot fetch the log of ${source.label} from ${url}: ${cause?.message ?? (err as Error).message} (is its node runtime up?)`);
  }
  if (!res.ok) throw new Error(`the log of ${source.label} could not be read: HTTP ${res.status} from ${url}: ${errorBody(await res.text())}`);
  if (!res.body) return;
  const reader = res.body.getReader();
  const lines = prefix !== undefined ? new LinePrefixer(prefix) : undefined;
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (lines) {
      const text = lines.push(decoder.decode(value, { stream: true }));
      if (text) await write(text);
    } else {
      await write(value);
    }
  }
  if (lines) {
    const rest = lines.push(decoder.decode()) + lines.flush();
    if (rest) await write(rest);
  }
}

/**
 * `gpufleet logs NAME`: the log of a deployment's replica (or, with --all, of each, prefixed) or
 * of an instance, fetched from the node runtime's logs URL.
 */
export async function runLogs(o: LogsOptions): Promise<void> {
  const write = o.write ?? writeStdout;
  const note = o.note ?? ((t: string) => process.stderr.write(`${t}\n`));
  const { deployment, instance } = await lookUp(o.scheduler, o.namespace, o.name);
  let sources: LogSource[];
  if (deployment) {
    const picked = deploymentLogSources(deployment, { role: o.role, replica: o.replica, all: o.all });
    for (const s of picked.skipped) note(`# ${s}`);
    sources = picked.sources;
  } else if (instance) {
    const given = [o.replica !== undefined && '--replica', o.role !== undefined && '--role', o.all && '--all'].filter(Boolean);
    if (given.length) throw new Error(`${given.join(', ')}: "${o.name}" is an instance, not a deployment; these choose a deployment's replicas`);
    sources = [instanceLogSource(instance)];
  } else {
    return;
  }
  if (o.sshd && !instance) throw new Error(`--sshd: "${o.name}" is a deployment; only instances run an sshd`);
  const opts = { tail: o.tail, follow: o.follow, process: o.sshd ? ('sshd' as const) : undefined };
  if (!o.all) {
    await stream(sources[0], logsRequestUrl(sources[0].url, opts), write);
    return;
  }
  // Followed logs interleave as lines arrive; otherwise each replica's log is printed whole, in turn.
  if (o.follow) {
    await Promise.all(sources.map((s) => stream(s, logsRequestUrl(s.url, opts), write, `[${s.label}] `)));
  } else {
    for (const s of sources) await stream(s, logsRequestUrl(s.url, opts), write, `[${s.label}] `);
  }
}

/** The HTTP front: authentication, URL routing, content negotiation and the test-facing handle. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { makeTestCertificates } from '../certificates';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, SERVER_VERSION } from './discovery';
import { KubeApiError, methodNotAllowed, unauthorized, unsupportedMediaType } from './errors';
import { decodeProtobufObject, PROTOBUF } from './protobuf';
import { openApiGroupVersion, openApiRoot } from './openapi';
import { BUILTIN_KINDS, KindTable, ResourceKind } from './kinds';
import { KubeResources, PropagationPolicy, parseBody, WriteOptions } from './resources';
import { ObjectStore } from './store';
import { TableOptions, toTable } from './tables';
import { isObject, KubeObject } from './types';
import { OpenWatch, serveWatch } from './watch';

export interface KubeApiServerOptions {
  /** Kinds served in addition to the built-in table (CRDs created at run time need none). */
  kinds?: ResourceKind[];
  /**
   * Serve HTTPS with a throwaway CA (written into the kubeconfig). Default true: kubectl (client-go)
   * never sends a bearer token over plain http, so authentication needs TLS.
   */
  tls?: boolean;
  /** Bearer token clients must send; `null` turns authentication off. Default: a random token with TLS, none without. */
  token?: string | null;
  /** Watch events kept for replay; a watch from an older resourceVersion gets 410. Default 1000. */
  historyLimit?: number;
  /** How often a watch that allowed bookmarks gets one. Default 1000 ms. */
  bookmarkIntervalMs?: number;
}

/** Options for `new KubeConfig().loadFromOptions(...)` of @kubernetes/client-node. */
export interface KubeConfigOptions {
  clusters: { name: string; server: string; skipTLSVerify: boolean; caData?: string }[];
  users: { name: string; token?: string }[];
  contexts: { name: string; cluster: string; user: string; namespace: string }[];
  currentContext: string;
}

export interface RequestRecord {
  method: string;
  path: string;
  query: string;
  status: number;
}

export interface KubeApiServer {
  readonly url: string;
  readonly token: string | null;
  /** A kubeconfig file for `kubectl --kubeconfig`, removed by close(). */
  readonly kubeconfigPath: string;
  kubeConfig(): KubeConfigOptions;
  readonly store: ObjectStore;
  readonly resources: KubeResources;
  readonly kinds: KindTable;
  /** The last 500 requests, oldest first: what a test asserts a client did. */
  readonly requests: readonly RequestRecord[];
  /** Create or replace an object, status included, as manager `test-fixture` (never a conflict): a fixture helper. */
  put(obj: KubeObject): KubeObject;
  /** Send every open watch a 410 ERROR and end it; with compact(), what an etcd compaction does. */
  expireWatches(): void;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 3 * 1024 * 1024; // the apiserver's request size limit
const MAX_REQUEST_LOG = 500;
const NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

interface Route {
  kind: ResourceKind;
  namespace?: string;
  name?: string;
  subresource?: string;
  legacyWatch: boolean;
}

function resolveRoute(kinds: KindTable, group: string, version: string, rest: string[]): Route {
  const legacyWatch = rest[0] === 'watch';
  const parts = legacyWatch ? rest.slice(1) : rest;
  const namespacedKind = parts[0] === 'namespaces' && parts.length >= 3 ? kinds.find(group, version, parts[2]) : undefined;
  const [namespace, resource, name, subresource, ...extra] = namespacedKind?.namespaced ? [parts[1], ...parts.slice(2)] : [undefined, ...parts];
  const kind = resource ? kinds.find(group, version, resource) : undefined;
  const notFound = new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
  if (!kind || extra.length > 0) throw notFound;
  if (kind.namespaced === false && namespace !== undefined) throw notFound;
  if (kind.namespaced && namespace === undefined && name !== undefined) throw notFound;
  const served =
    (subresource === 'status' && kind.statusSubresource) || (subresource === 'scale' && kind.scale) || (subresource === 'binding' && kind.resource === 'pods' && kind.group === '');
  if (subresource && !served) throw notFound;
  return { kind, namespace, name, subresource, legacyWatch };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new KubeApiError(413, 'RequestEntityTooLarge', `the request body is larger than ${MAX_BODY_BYTES} bytes`));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** A create or update body: JSON, YAML, or the protobuf kubectl's typed clients send. */
async function readObject(req: IncomingMessage): Promise<unknown> {
  const contentType = req.headers['content-type'] ?? 'application/json';
  const body = await readBody(req);
  if (contentType.startsWith(PROTOBUF)) return decodeProtobufObject(body);
  if (!/json|yaml/.test(contentType)) throw unsupportedMediaType(contentType);
  return parseBody(body.toString('utf8'), contentType);
}

/** `kubectl get` asks for `application/json;as=Table;v=v1;g=meta.k8s.io`; anything else gets plain JSON. */
function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((part) => /as=Table/.test(part) && /g=meta\.k8s\.io/.test(part));
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startKubeApiServer(options: KubeApiServerOptions = {}): Promise<KubeApiServer> {
  const tls = options.tls ?? true;
  const token = options.token === undefined ? (tls ? `gpufleet-sim-${randomBytes(12).toString('hex')}` : null) : options.token;
  const dir = mkdtempSync(join(tmpdir(), 'gpufleet-kube-apiserver-'));
  const certs = tls ? makeTestCertificates(dir) : undefined;
  const kinds = new KindTable([...BUILTIN_KINDS, ...(options.kinds ?? [])]);
  const store = new ObjectStore(options.historyLimit ?? 1000);
  const resources = new KubeResources(store, kinds);
  const namespaceKind = kinds.find('', 'v1', 'namespaces');
  for (const name of NAMESPACES) if (namespaceKind) resources.create(namespaceKind, undefined, { metadata: { name } }, { fieldManager: 'kube-apiserver' });
  const watches = new Set<OpenWatch>();
  const requests: RequestRecord[] = [];
  let address = '';

  const handle = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> => {
    const segments = url.pathname.split('/').filter((s) => s !== '');
    const q = url.searchParams;
    if (['healthz', 'livez', 'readyz'].includes(segments[0] ?? '')) {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      return;
    }
    if (url.pathname === '/version') return sendJson(res, 200, SERVER_VERSION);
    if (token !== null && req.headers.authorization !== `Bearer ${token}`) throw unauthorized();

    const notFound = new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
    let group: string;
    let version: string;
    let rest: string[];
    if (segments[0] === 'api') {
      if (segments.length === 1) return sendJson(res, 200, apiVersions(address));
      [group, version, rest] = ['', segments[1], segments.slice(2)];
    } else if (segments[0] === 'apis') {
      if (segments.length === 1) return sendJson(res, 200, apiGroupList(kinds));
      if (segments.length === 2) {
        const g = apiGroup(kinds, segments[1]);
        if (!g) throw notFound;
        return sendJson(res, 200, g);
      }
      [group, version, rest] = [segments[1], segments[2], segments.slice(3)];
    } else if (segments[0] === 'openapi' && segments[1] === 'v3') {
      if (segments.length === 2) return sendJson(res, 200, openApiRoot(kinds));
      const doc = openApiGroupVersion(kinds, segments.slice(2).join('/'));
      if (!doc) throw notFound;
      return sendJson(res, 200, doc);
    } else throw notFound; // /openapi/v2 included: kubectl copes without it once v3 answers
    if (rest.length === 0) {
      const list = apiResourceList(kinds, group, version);
      if (!list) throw notFound;
      return sendJson(res, 200, list);
    }

    const route = resolveRoute(kinds, group, version, rest);
    const { kind, namespace, name, subresource } = route;
    const table: TableOptions | undefined = wantsTable(req.headers.accept)
      ? { includeObject: (q.get('includeObject') as TableOptions['includeObject'] | null) ?? 'Metadata' }
      : undefined;
    const write = {
      fieldManager: q.get('fieldManager') ?? req.headers['user-agent']?.split('/')[0] ?? 'unknown',
      subresource,
      dryRun: q.get('dryRun') === 'All',
      fieldValidation: (q.get('fieldValidation') ?? undefined) as WriteOptions['fieldValidation'],
    };

    switch (req.method) {
      case 'GET': {
        const watching = route.legacyWatch || q.get('watch') === '1' || q.get('watch') === 'true';
        if (watching) {
          const timeout = Number(q.get('timeoutSeconds') ?? 0);
          return serveWatch(resources, res, {
            kind,
            namespace,
            name,
            labelSelector: q.get('labelSelector'),
            fieldSelector: q.get('fieldSelector'),
            resourceVersion: q.get('resourceVersion'),
            timeoutSeconds: Number.isFinite(timeout) ? timeout : 0,
            allowWatchBookmarks: q.get('allowWatchBookmarks') === 'true',
            bookmarkIntervalMs: options.bookmarkIntervalMs ?? 1000,
            table,
          }, watches);
        }
        if (name !== undefined && subresource === 'scale') return sendJson(res, 200, resources.getScale(kind, namespace, name));
        if (name !== undefined) {
          const obj = resources.get(kind, namespace, name);
          return sendJson(res, 200, table ? toTable(kind, [obj], { resourceVersion: obj.metadata.resourceVersion }, table) : obj);
        }
        const list = resources.list(kind, namespace, {
          labelSelector: q.get('labelSelector'),
          fieldSelector: q.get('fieldSelector'),
          limit: Number(q.get('limit') ?? 0) || undefined,
          continue: q.get('continue'),
        });
        return sendJson(res, 200, table ? toTable(kind, list.items, list.metadata, table) : list);
      }
      case 'POST': {
        if (name !== undefined && subresource !== 'binding') throw methodNotAllowed('POST');
        const body = await readObject(req);
        if (subresource === 'binding' && isObject(body)) body['metadata'] = { ...(isObject(body['metadata']) ? body['metadata'] : {}), name };
        return sendJson(res, 201, resources.create(kind, namespace, body, write));
      }
      case 'PUT': {
        if (name === undefined) throw methodNotAllowed('PUT');
        const body = await readObject(req);
        return sendJson(res, 200, resources.update(kind, namespace, name, body, write));
      }
      case 'PATCH': {
        if (name === undefined) throw methodNotAllowed('PATCH');
        const raw = (await readBody(req)).toString('utf8');
        const contentType = req.headers['content-type'] ?? '';
        // Apply must name its manager (the apiserver refuses it otherwise); other patches default to the user agent.
        const fieldManager = contentType.startsWith('application/apply-patch') ? (q.get('fieldManager') ?? undefined) : write.fieldManager;
        const patched = resources.patch(kind, namespace, name, contentType, raw, { ...write, fieldManager, force: q.get('force') === 'true' });
        return sendJson(res, 200, patched);
      }
      case 'DELETE': {
        const bytes = await readBody(req);
        const raw = bytes.toString('utf8');
        // client-go's typed clients (kubectl drain) send DeleteOptions as protobuf.
        const body = (req.headers['content-type'] ?? '').startsWith(PROTOBUF) && bytes.length > 0 ? decodeProtobufObject(bytes) : raw.trim() ? parseBody(raw, 'application/json') : {};
        const policy = (q.get('propagationPolicy') ?? (isObject(body) ? body['propagationPolicy'] : undefined) ?? 'Background') as PropagationPolicy;
        if (name === undefined) {
          return sendJson(res, 200, resources.deleteCollection(kind, namespace, { labelSelector: q.get('labelSelector'), fieldSelector: q.get('fieldSelector') }, policy));
        }
        return sendJson(res, 200, resources.delete(kind, namespace, name, policy));
      }
      default:
        throw methodNotAllowed(req.method ?? '');
    }
  };

  const listener: RequestListener = (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    res.on('finish', () => {
      requests.push({ method: req.method ?? '', path: url.pathname, query: url.search, status: res.statusCode });
      if (requests.length > MAX_REQUEST_LOG) requests.splice(0, requests.length - MAX_REQUEST_LOG);
    });
    handle(req, res, url).catch((err: unknown) => {
      const error = err instanceof KubeApiError ? err : new KubeApiError(500, 'InternalError', `Internal error occurred: ${(err as Error).message}`);
      if (res.headersSent) {
        res.end();
        return;
      }
      sendJson(res, error.code, error.toStatus());
    });
  };
  const server: Server = certs ? createHttpsServer({ cert: readFileSync(certs.cert), key: readFileSync(certs.key) }, listener) : createHttpServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  address = `127.0.0.1:${port}`;
  const url = `${certs ? 'https' : 'http'}://${address}`;
  const caData = certs ? readFileSync(certs.ca).toString('base64') : undefined;
  const kubeconfigPath = join(dir, 'kubeconfig');
  const kubeConfig = (): KubeConfigOptions => ({
    // client-node refuses an http:// server unless TLS verification is declared skipped.
    clusters: [{ name: 'gpufleet-sim', server: url, skipTLSVerify: !certs, ...(caData ? { caData } : {}) }],
    users: [{ name: 'gpufleet-sim', ...(token !== null ? { token } : {}) }],
    contexts: [{ name: 'gpufleet-sim', cluster: 'gpufleet-sim', user: 'gpufleet-sim', namespace: 'default' }],
    currentContext: 'gpufleet-sim',
  });
  writeFileSync(
    kubeconfigPath,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'gpufleet-sim', cluster: { server: url, ...(caData ? { 'certificate-authority-data': caData } : {}) } }],
      users: [{ name: 'gpufleet-sim', user: token !== null ? { token } : {} }],
      contexts: [{ name: 'gpufleet-sim', context: { cluster: 'gpufleet-sim', user: 'gpufleet-sim', namespace: 'default' } }],
      'current-context': 'gpufleet-sim',
    }),
    { mode: 0o600 },
  );

  return {
    url,
    token,
    kubeconfigPath,
    kubeConfig,
    store,
    resources,
    kinds,
    requests,
    put(obj) {
      const kind = kinds.byApiVersionKind(obj.apiVersion, obj.kind);
      if (!kind) throw new Error(`KIND_NOT_SERVED: ${obj.apiVersion} ${obj.kind} is not in the kind table; register it with startKubeApiServer({ kinds })`);
      const namespace = obj.metadata.namespace ?? (kind.namespaced ? 'default' : undefined);
      const existing = store.get(`${kind.group}/${kind.resource}`, namespace, obj.metadata.name ?? '');
      if (!existing) {
        const created = resources.create(kind, namespace, { ...obj, status: undefined }, { fieldManager: 'test-fixture' });
        if (obj['status'] === undefined) return created;
        return resources.update(kind, namespace, obj.metadata.name ?? '', { ...created, status: obj['status'] }, { fieldManager: 'test-fixture', subresource: kind.statusSubresource ? 'status' : undefined });
      }
      const main = resources.update(kind, namespace, obj.metadata.name ?? '', { ...obj, metadata: { ...obj.metadata, resourceVersion: undefined } }, { fieldManager: 'test-fixture' });
      if (!kind.statusSubresource) return main;
      return resources.update(kind, namespace, obj.metadata.name ?? '', { ...main, status: obj['status'] }, { fieldManager: 'test-fixture', subresource: 'status' });
    },
    expireWatches() {
      for (const w of [...watches]) w.expire();
    },
    async close() {
      for (const w of [...watches]) w.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections(); // clients keep connections alive; close() alone would wait for them
      await closed;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Watch streams: newline-delimited JSON events over a chunked response. The headers are flushed at
 * once (clients wait for them before reading), a client leaving is noticed by `close`, and a client
 * too slow to drain its socket is dropped rather than buffered without bound.
 */
import type { ServerResponse } from 'node:http';
import { KubeApiError } from './errors';
import { groupVersion, ResourceKind } from './kinds';
import { kindKeyOf, KubeResources } from './resources';
import { fieldSelector, labelSelector } from './selectors';
import { StoredEvent } from './store';
import { TableOptions, toTable } from './tables';
import { KubeObject, WatchEventType } from './types';

/** Bytes a watch may have queued unsent before it is closed (the apiserver drops slow watchers too). */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

export interface WatchRequest {
  kind: ResourceKind;
  namespace?: string;
  name?: string;
  labelSelector?: string | null;
  fieldSelector?: string | null;
  resourceVersion?: string | null;
  timeoutSeconds?: number;
  allowWatchBookmarks: boolean;
  bookmarkIntervalMs: number;
  table?: TableOptions;
}

export interface OpenWatch {
  /** End the stream with a 410 ERROR event, as when the watch cache has moved past the client. */
  expire(): void;
  close(): void;
}

export function serveWatch(resources: KubeResources, res: ServerResponse, w: WatchRequest, registry: Set<OpenWatch>): void {
  const labels = labelSelector(w.labelSelector);
  const fields = fieldSelector(w.fieldSelector);
  const kindKey = kindKeyOf(w.kind);
  const inScope = (o: KubeObject): boolean =>
    (!w.kind.namespaced || w.namespace === undefined || o.metadata.namespace === w.namespace) && (w.name === undefined || o.metadata.name === w.name);
  const selected = (o: KubeObject | undefined): boolean => o !== undefined && inScope(o) && labels(o) && fields(o);

  // Validate the starting point before any byte is written, so a bad request still gets a status code.
  const rv = w.resourceVersion;
  let replay: StoredEvent[] | KubeApiError;
  try {
    replay = rv && rv !== '0' ? resources.store.eventsSince(kindKey, Number(rv)) : [];
  } catch (err) {
    if (!(err instanceof KubeApiError)) throw err;
    replay = err;
  }

  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
  res.flushHeaders();

  let closed = false;
  const timers: NodeJS.Timeout[] = []; // at most two: the timeout and the bookmark interval
  const write = (type: WatchEventType, object: unknown): void => {
    if (closed || res.writableEnded) return;
    res.write(JSON.stringify({ type, object }) + '\n');
    if (res.writableLength > MAX_BUFFERED_BYTES) finish();
  };
  const send = (type: WatchEventType, obj: KubeObject): void => {
    const presented = resources.present(w.kind, obj);
    write(type, w.table ? toTable(w.kind, [presented], { resourceVersion: obj.metadata.resourceVersion }, w.table) : presented);
  };
  const onEvent = (e: StoredEvent): void => {
    if (e.kindKey !== kindKey) return;
    const now = selected(e.object);
    if (e.type !== 'MODIFIED') {
      if (now) send(e.type, e.object);
      return;
    }
    // A selector turns modifications across its boundary into the appearance or disappearance.
    const before = selected(e.previous);
    if (now) send(before ? 'MODIFIED' : 'ADDED', e.object);
    else if (before) send('DELETED', e.object);
  };
  const unsubscribe = resources.store.subscribe(onEvent);
  const handle: OpenWatch = {
    expire: () => {
      write('ERROR', new KubeApiError(410, 'Expired', 'too old resource version: the watch cache was reset').toStatus());
      finish();
    },
    close: () => finish(),
  };
  registry.add(handle);
  function finish(): void {
    if (closed) return;
    closed = true;
    unsubscribe();
    registry.delete(handle);
    for (const t of timers) clearTimeout(t);
    res.end();
  }
  res.on('close', finish); // the client went away (or the server is closing)

  if (replay instanceof KubeApiError) {
    write('ERROR', replay.toStatus());
    finish();
    return;
  }
  if (!rv || rv === '0') {
    for (const obj of resources.store.list(kindKey, w.kind.namespaced ? w.namespace : undefined)) if (selected(obj)) send('ADDED', obj);
  } else {
    for (const e of replay) onEvent(e);
  }
  if (w.timeoutSeconds && w.timeoutSeconds > 0) timers.push(setTimeout(finish, w.timeoutSeconds * 1000));
  if (w.allowWatchBookmarks && !w.table) {
    // A BOOKMARK carries only a resourceVersion, so a client can resume from it after a quiet spell.
    const bookmark = (): void => write('BOOKMARK', { kind: w.kind.kind, apiVersion: groupVersion(w.kind), metadata: { resourceVersion: String(resources.store.resourceVersion) } });
    timers.push(setInterval(bookmark, w.bookmarkIntervalMs));
  }
}

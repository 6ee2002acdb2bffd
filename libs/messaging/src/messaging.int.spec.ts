import { NatsConnection, headers as natsHeaders, StringCodec } from 'nats';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { EVENTS_STREAM, Events, NodeHeartbeat, NodeInventory, scopedSubjectOf } from '@gpufleet/contracts';
import { RunningServer, startNats, waitFor } from '@gpufleet/testing';
import { connectNats } from './connection';
import { EventBus, ReceivedEvent, ensureEventsStream, HEADER_EVENT } from './events';
import { KvChange, KvStore, RevisionConflictError } from './kv-store';

describe('messaging on a real nats-server', () => {
  let nats: RunningServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats({ servers: [nats.url], name: 'messaging-spec' });
    await ensureEventsStream(await nc.jetstreamManager());
  });
  afterAll(async () => {
    await nc?.close();
    await nats?.dispose();
  });

  it('delivers a typed event with its type, id and the publisher trace context, and the stream retains it', async () => {
    const provider = new BasicTracerProvider();
    trace.setGlobalTracerProvider(provider);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

    const bus = new EventBus(nc, 'alpha');
    const received: Array<{ ev: ReceivedEvent<NodeHeartbeat>; traceId?: string }> = [];
    bus.subscribe(Events.heartbeat, (ev) => {
      received.push({ ev, traceId: trace.getActiveSpan()?.spanContext().traceId });
    });
    await nc.flush();
    const parent = trace.getTracer('spec').startSpan('parent');
    const id = context.with(trace.setSpan(context.active(), parent), () =>
      bus.publish(Events.heartbeat, { nodeName: 'n1', cluster: 'alpha', generation: 3, sentAt: new Date() }),
    );
    parent.end();
    await waitFor('event', () => received.length > 0 || undefined);
    expect(received[0].ev.payload).toMatchObject({ nodeName: 'n1', generation: 3 });
    expect(received[0].ev.id).toBe(id);
    expect(received[0].ev.type).toBe('devices.heartbeat.v1');
    expect(received[0].traceId).toBe(parent.spanContext().traceId);

    const info = await (await nc.jetstreamManager()).streams.info(EVENTS_STREAM);
    expect(info.state.messages).toBeGreaterThanOrEqual(1);
  });

  it('drops malformed messages, wrong or missing event types, reporting why', async () => {
    const bus = new EventBus(nc, 'beta');
    const good: string[] = [];
    const invalid: string[] = [];
    bus.subscribe(Events.inventory, (ev) => void good.push(ev.payload.nodeName), { onInvalid: (e) => invalid.push(e.message) });
    await nc.flush();
    const subject = scopedSubjectOf(Events.inventory, 'beta', 'some-node');
    const typed = natsHeaders();
    typed.set(HEADER_EVENT, Events.inventory.type);
    nc.publish(subject, StringCodec().encode('{not json'), { headers: typed });
    const h = natsHeaders();
    h.set(HEADER_EVENT, 'devices.heartbeat.v1');
    nc.publish(subject, StringCodec().encode('{}'), { headers: h });
    nc.publish(subject, StringCodec().encode('{"nodeName":"no-header"}'));
    // A node's event on another node's subject: what a spoofing agent would send.
    nc.publish(scopedSubjectOf(Events.inventory, 'beta', 'mine'), StringCodec().encode('{"nodeName":"someone-else"}'), { headers: typed });
    bus.publish(Events.inventory, NodeInventory.fromPartial({ nodeName: 'ok-node', cluster: 'beta' }));
    await waitFor('good event', () => good.length > 0 || undefined);
    expect(good).toEqual(['ok-node']);
    await waitFor('every refusal', () => invalid.length >= 4 || undefined);
    expect(invalid).toHaveLength(4);
    expect(invalid[3]).toMatch(/its payload names node "someone-else", the subject node "mine"/);
    expect(invalid[0]).toMatch(/not JSON/);
    expect(invalid[1]).toMatch(/is "devices.heartbeat.v1", expected "devices.inventory.v1"/);
    expect(invalid[2]).toMatch(/header gpufleet-event is missing/);
  });

  it('compare-and-set rejects a stale revision and keeps the accepted value', async () => {
    const store = await KvStore.open(nc.jetstream(), 'spec-cas', NodeHeartbeat, { storage: 'memory' });
    const r1 = await store.create('n1', NodeHeartbeat.fromPartial({ nodeName: 'n1', generation: 1 }));
    await expect(store.create('n1', NodeHeartbeat.fromPartial({ nodeName: 'n1' }))).rejects.toBeInstanceOf(RevisionConflictError);
    const r2 = await store.update('n1', NodeHeartbeat.fromPartial({ nodeName: 'n1', generation: 2 }), r1);
    await expect(store.update('n1', NodeHeartbeat.fromPartial({ nodeName: 'n1', generation: 99 }), r1)).rejects.toThrow(
      /REVISION_CONFLICT: spec-cas\/n1 changed since revision/,
    );
    expect(await store.get('n1')).toMatchObject({ revision: r2, value: { generation: 2 } });
    await expect(store.delete('n1', r1)).rejects.toBeInstanceOf(RevisionConflictError);
    await store.delete('n1', r2);
    expect(await store.get('n1')).toBeUndefined();
    expect(() => store.put('bad key', NodeHeartbeat.fromPartial({}))).toThrow(/key "bad key" is invalid/);
  });
});

describe('a KV watch across a NATS restart', () => {
  it('misses no change made while NATS was down and after it came back', async () => {
    const nats = await startNats();
    const writer = await connectNats({ servers: [nats.url], name: 'writer' });
    const reader = await connectNats({ servers: [nats.url], name: 'reader' });
    try {
      const wstore = await KvStore.open(writer.jetstream(), 'spec-watch', NodeHeartbeat);
      await wstore.put('a', NodeHeartbeat.fromPartial({ nodeName: 'a', generation: 1 }));
      const rstore = await KvStore.open(reader.jetstream(), 'spec-watch', NodeHeartbeat);
      const seen = new Map<string, number>();
      const changes: KvChange<NodeHeartbeat>[] = [];
      const handle = rstore.watch((c) => {
        changes.push(c);
        if (c.kind === 'put') seen.set(c.key, c.value.generation);
        else seen.delete(c.key);
      }, { retryMs: 200 });
      await handle.ready;
      expect(seen.get('a')).toBe(1);

      await nats.restart();
      await waitFor('writer reconnect', async () => {
        await wstore.put('b', NodeHeartbeat.fromPartial({ nodeName: 'b', generation: 7 }));
        return true;
      }, { timeoutMs: 15_000, intervalMs: 250 });
      await wstore.put('a', NodeHeartbeat.fromPartial({ nodeName: 'a', generation: 2 }));
      await wstore.delete('b');
      await waitFor('changes after restart', () => (seen.get('a') === 2 && !seen.has('b')) || undefined, { timeoutMs: 20_000 });
      const revisions = changes.map((c) => c.revision);
      expect(new Set(revisions).size).toBe(revisions.length); // nothing delivered twice
      handle.stop();
    } finally {
      await writer.close();
      await reader.close();
      await nats.dispose();
    }
  });
});

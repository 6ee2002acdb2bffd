import { Lease } from '@gpufleet/contracts';
import { RunningServer, startNats, waitFor } from '@gpufleet/testing';
import { NatsConnection } from 'nats';
import { connectNats } from './connection';
import { KvStore, RevisionConflictError } from './kv-store';
import { LeaderLease } from './lease';

describe('LeaderLease on a real nats-server', () => {
  let nats: RunningServer;
  let nc: NatsConnection;
  let store: KvStore<Lease>;
  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats({ servers: [nats.url], name: 'lease-spec' });
    store = await KvStore.open(nc.jetstream(), 'spec-leases', Lease);
  });
  afterAll(async () => {
    await nc.close();
    await nats.dispose();
  });

  function contender(holder: string, events: string[]) {
    return new LeaderLease(store, 'scheduler', {
      holder,
      renewEveryMs: 100,
      expireAfterMs: 600,
      onAcquired: (term) => void events.push(`${holder} acquired term ${term}`),
      onLost: (why) => void events.push(`${holder} lost: ${why}`),
    });
  }

  it('refuses a renewal period that is not shorter than the expiry', () => {
    const options = { holder: 'x', onAcquired: () => undefined, onLost: () => undefined };
    expect(() => new LeaderLease(store, 'bad', { ...options, renewEveryMs: 600, expireAfterMs: 600 })).toThrow(
      'lease bad: expected 0 < renewEveryMs < expireAfterMs, got renewEveryMs 600 and expireAfterMs 600: the lease would lapse between renewals',
    );
  });

  it('times expiry on its monotonic clock, not the wall clock', async () => {
    const events: string[] = [];
    const a = contender('a', events);
    a.start();
    await waitFor('a leads', () => a.isLeader || undefined);
    await a.stop(false); // silent from now on
    // A standby whose monotonic clock stands still waits however much wall time passes…
    let frozen = 0;
    const b = new LeaderLease(store, 'scheduler', { holder: 'b', renewEveryMs: 100, expireAfterMs: 600, onAcquired: () => void events.push('b acquired'), onLost: () => undefined }, () => frozen);
    b.start();
    await new Promise((r) => setTimeout(r, 1_200));
    expect(b.isLeader).toBe(false);
    // …and takes over once that clock has moved past the expiry.
    frozen = 10_000;
    await waitFor('b takes over', () => b.isLeader || undefined, { timeoutMs: 5_000 });
    await b.stop();
  });

  it('one holder at a time; a standby takes over a silent holder, which then steps down', async () => {
    const events: string[] = [];
    const a = contender('a', events);
    const b = contender('b', events);
    a.start();
    await waitFor('a leads', () => a.isLeader || undefined);
    b.start();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(b.isLeader).toBe(false); // a keeps renewing

    // a hangs (stops renewing without releasing), as a crashed or paused process would.
    await a.stop(false);
    const silentAt = Date.now();
    await waitFor('b takes over', () => b.isLeader || undefined, { timeoutMs: 5_000 });
    expect(Date.now() - silentAt).toBeLessThan(2_000);
    expect(b.currentTerm).toBe(2);
    expect((await store.get('scheduler'))?.value.holder).toBe('b');
    expect(events).toEqual(['a acquired term 1', 'b acquired term 2']);
    await b.stop();
    expect(await store.get('scheduler')).toBeUndefined(); // released for the next one
  });

  it('a holder whose renewal is overtaken learns it and stops leading', async () => {
    const events: string[] = [];
    const a = contender('a2', events);
    a.start();
    await waitFor('a2 leads', () => a.isLeader || undefined);
    // The intruder writes over the lease with compare-and-set; a2 may renew between its read and
    // its write (a slow machine), so it re-reads and tries again, as any writer would.
    await waitFor('the intruder takes the lease', async () => {
      const current = (await store.get('scheduler'))!;
      try {
        await store.update('scheduler', { ...current.value, holder: 'intruder', term: current.value.term + 1 }, current.revision);
        return true;
      } catch (err) {
        if (err instanceof RevisionConflictError) return undefined;
        throw err;
      }
    });
    await waitFor('a2 steps down', () => !a.isLeader || undefined);
    expect(events[1]).toMatch(/a2 lost: lease scheduler was taken over/);
    await a.stop();
  });
});

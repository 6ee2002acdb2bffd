import fc from 'fast-check';
import type { ReplicaView } from '../replica';
import { CacheAwarePolicy } from './cache-aware';
import { randomInt, randomText, replicas, seededRandom } from './__fixtures__/replicas';

const SYSTEM = 'You are a meticulous assistant for GPU cluster operators. Answer briefly. ';

function request(text: string, model = 'llama') {
  return { model, text };
}

describe('cache_aware', () => {
  it('sends a prompt sharing at least cacheThreshold of itself to the replica that served it', () => {
    const policy = new CacheAwarePolicy();
    const first = policy.pick(request(`${SYSTEM}How many GPUs?`), replicas(4))!;
    // Another replica is idler now; the shared prefix still wins.
    const set = replicas(4, { [Number(first.id.slice(1))]: { inFlight: 5 } });
    expect(policy.pick(request(`${SYSTEM}How much memory?`), set)!.id).toBe(first.id);
  });

  it('sends a prompt matching less than cacheThreshold to the least loaded replica', () => {
    const policy = new CacheAwarePolicy({ cacheThreshold: 0.9 });
    const first = policy.pick(request(`${SYSTEM}How many GPUs?`), replicas(2))!;
    const other = first.id === 'r0' ? 'r1' : 'r0';
    const set = replicas(2, { [Number(first.id.slice(1))]: { inFlight: 1 } });
    expect(policy.pick(request(`${SYSTEM}Tell me a long story about the history of accelerators.`), set)!.id).toBe(other);
  });

  it('remembers the prompt under the replica it picked, however it picked it', () => {
    const policy = new CacheAwarePolicy({ cacheThreshold: 0.9 });
    const chosen = policy.pick(request('a prompt'), replicas(3, { 0: { inFlight: 2 }, 2: { inFlight: 1 } }))!;
    expect(chosen.id).toBe('r1');
    expect(policy.treeFor('llama').match('a prompt').replicaId).toBe('r1');
  });

  it('goes to the least loaded replica when load is unbalanced both absolutely and relatively', () => {
    const policy = new CacheAwarePolicy({ balanceAbsThreshold: 4, balanceRelThreshold: 1.5 });
    policy.pick(request(`${SYSTEM}q1`), replicas(2, { 1: { inFlight: 1 } })); // r0 now caches SYSTEM
    // 10 - 5 > 4 and 10 > 7.5: unbalanced.
    expect(policy.pick(request(`${SYSTEM}q2`), replicas(2, { 0: { inFlight: 10 }, 1: { inFlight: 5 } }))!.id).toBe('r1');
    // 10 - 7 ≤ 4: balanced enough, the cache wins; r1 also holds SYSTEM now, so pin the tie by load.
    const fresh = new CacheAwarePolicy({ balanceAbsThreshold: 4, balanceRelThreshold: 1.5 });
    fresh.pick(request(`${SYSTEM}q1`), replicas(2, { 1: { inFlight: 1 } }));
    expect(fresh.pick(request(`${SYSTEM}q2`), replicas(2, { 0: { inFlight: 10 }, 1: { inFlight: 7 } }))!.id).toBe('r0');
    // 40 - 25 > 4 but 40 ≤ 1.6 × 25: balanced enough relatively.
    const relative = new CacheAwarePolicy({ balanceAbsThreshold: 4, balanceRelThreshold: 1.6 });
    relative.pick(request(`${SYSTEM}q1`), replicas(2, { 1: { inFlight: 1 } }));
    expect(relative.pick(request(`${SYSTEM}q2`), replicas(2, { 0: { inFlight: 40 }, 1: { inFlight: 25 } }))!.id).toBe('r0');
  });

  it('sees the load other routers put on a replica through its engine’s metrics, in the balance check', () => {
    const options = { balanceAbsThreshold: 4, balanceRelThreshold: 1.5 };
    const busyElsewhere = { running: 10, waiting: 2, inFlightAtSample: 0 };
    const policy = new CacheAwarePolicy(options);
    policy.pick(request(`${SYSTEM}q1`), replicas(2, { 1: { inFlight: 1 } })); // r0 now caches SYSTEM
    // This router has nothing on either, but r0's engine holds 12 requests of other routers: unbalanced.
    expect(policy.pick(request(`${SYSTEM}q2`), replicas(2, { 0: { engineLoad: busyElsewhere } }))!.id).toBe('r1');
    // Without the sample (stale, or the engine's metrics unreadable) the cache wins.
    const blind = new CacheAwarePolicy(options);
    blind.pick(request(`${SYSTEM}q1`), replicas(2, { 1: { inFlight: 1 } }));
    expect(blind.pick(request(`${SYSTEM}q2`), replicas(2))!.id).toBe('r0');
  });

  it('sends a prompt without a cached prefix to the least loaded replica counting other routers’ load and avoiding a full KV cache', () => {
    const policy = new CacheAwarePolicy();
    const set = replicas(3, {
      0: { engineLoad: { running: 5, waiting: 0, inFlightAtSample: 0 } },
      1: { inFlight: 1, engineLoad: { running: 1, waiting: 0, kvCacheUsage: 0.99, inFlightAtSample: 1 } },
      2: { inFlight: 2 },
    });
    expect(policy.pick(request('a prompt nobody sent before'), set)!.id).toBe('r2');
  });

  it('never picks an ejected replica, even the one holding the prefix', () => {
    const policy = new CacheAwarePolicy();
    const first = policy.pick(request(`${SYSTEM}q1`), replicas(3))!;
    const set = replicas(3, { [Number(first.id.slice(1))]: { ejected: true } });
    const next = policy.pick(request(`${SYSTEM}q2`), set)!;
    expect(next.id).not.toBe(first.id);
    expect(policy.pick(request('x'), replicas(2, { 0: { ejected: true }, 1: { ejected: true } }))).toBeUndefined();
  });

  it('keeps prefixes per model', () => {
    const policy = new CacheAwarePolicy();
    const first = policy.pick(request(`${SYSTEM}q`, 'llama'), replicas(2))!;
    const busy = replicas(2, { [Number(first.id.slice(1))]: { inFlight: 3 } });
    expect(policy.pick(request(`${SYSTEM}q`, 'llama-lora-sql'), busy)!.id).not.toBe(first.id);
  });

  it('forgets a removed replica', () => {
    const policy = new CacheAwarePolicy();
    const first = policy.pick(request(`${SYSTEM}q`), replicas(2))!;
    policy.removeReplica(first.id);
    expect(policy.treeFor('llama').match(`${SYSTEM}q`).replicaId).toBeUndefined();
  });

  it('validates its options, naming the field', () => {
    expect(() => new CacheAwarePolicy({ cacheThreshold: 1.5 })).toThrow(
      'INVALID_ARGUMENT: routing.cacheThreshold: expected a number from 0 to 1, got 1.5',
    );
    expect(() => new CacheAwarePolicy({ balanceAbsThreshold: -1 })).toThrow('routing.balanceAbsThreshold: expected an integer ≥ 0, got -1');
    expect(() => new CacheAwarePolicy({ balanceRelThreshold: 0.5 })).toThrow('routing.balanceRelThreshold: expected a number ≥ 1, got 0.5');
    expect(() => new CacheAwarePolicy({ maxCharsPerReplica: 0 }, 'deployments.llama.routing')).toThrow(
      'deployments.llama.routing.maxCharsPerReplica: expected an integer ≥ 1, got 0',
    );
    expect(new CacheAwarePolicy().options).toEqual({
      cacheThreshold: 0.5,
      balanceAbsThreshold: 32,
      balanceRelThreshold: 1.5,
      maxCharsPerReplica: 4 * 1024 * 1024,
    });
  });

  describe('properties', () => {
    it('sends every repeat of a prefix to the replica that first served it while load is balanced', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 2, max: 8 }),
          fc.integer({ min: 1, max: 20 }),
          fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          (n, groups, seed) => {
            const random = seededRandom(seed);
            // Distinct first characters: no two groups share any prefix.
            const prefixes = Array.from({ length: groups }, (_, g) => String.fromCharCode(0x4e00 + g) + randomText(random, 200));
            const policy = new CacheAwarePolicy();
            const home = new Map<number, string>();
            const strays: string[] = []; // one expect at the end: jest's matchers cost more than a pick
            for (let i = 0; i < 300; i++) {
              const g = randomInt(random, groups);
              // Spread below balanceAbsThreshold: never unbalanced.
              const set = replicas(n).map((r) => ({ ...r, inFlight: randomInt(random, 32) }));
              const picked = policy.pick(request(prefixes[g] + randomText(random, randomInt(random, 150))), set)!;
              if (picked.id !== (home.get(g) ?? picked.id)) strays.push(`request ${i} of group ${g} went to ${picked.id}, not ${home.get(g)}`);
              home.set(g, picked.id);
            }
            expect(strays).toEqual([]);
          },
        ),
        { numRuns: 60 },
      );
    });

    // Requests arrive one per tick with uniformly random prompts and stay in flight 1..maxLife
    // ticks; every replica ends having served at most 1.5× the mean.
    it('keeps every replica within 1.5× the mean load on a uniform random workload', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 2, max: 8 }),
          fc.integer({ min: 1, max: 200 }),
          fc.integer({ min: 500, max: 2000 }),
          fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          (n, maxLife, requests, seed) => {
            const random = seededRandom(seed);
            const policy = new CacheAwarePolicy();
            const inFlight = new Array<number>(n).fill(0);
            const served = new Array<number>(n).fill(0);
            const finishes: { at: number; replica: number }[] = [];
            for (let tick = 0; tick < requests; tick++) {
              for (let i = finishes.length - 1; i >= 0; i--) {
                if (finishes[i].at <= tick) {
                  inFlight[finishes[i].replica]--;
                  finishes.splice(i, 1);
                }
              }
              const set: ReplicaView[] = inFlight.map((count, i) => ({ id: `r${i}`, inFlight: count, ejected: false }));
              const text = randomText(random, 1 + randomInt(random, 300));
              const replica = Number(policy.pick(request(text), set)!.id.slice(1));
              inFlight[replica]++;
              served[replica]++;
              finishes.push({ at: tick + 1 + randomInt(random, maxLife), replica });
            }
            const mean = requests / n;
            expect(Math.max(...served)).toBeLessThanOrEqual(1.5 * mean);
          },
        ),
        { numRuns: 40 },
      );
    });

    // One hot prefix and no completions: affinity pulls everything to one replica until the
    // balance guard trips, so the in-flight spread never exceeds what the thresholds allow.
    it('bounds the in-flight spread by the balance thresholds under a single hot prefix', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 2, max: 6 }),
          fc.integer({ min: 0, max: 40 }),
          fc.double({ min: 1, max: 3, noNaN: true }),
          (n, abs, rel) => {
            const policy = new CacheAwarePolicy({ balanceAbsThreshold: abs, balanceRelThreshold: rel });
            const inFlight = new Array<number>(n).fill(0);
            let worstExcess = -Infinity; // spread minus its bound; one expect at the end
            for (let i = 0; i < 400; i++) {
              const set: ReplicaView[] = inFlight.map((count, r) => ({ id: `r${r}`, inFlight: count, ejected: false }));
              inFlight[Number(policy.pick(request(`${SYSTEM}question ${i}`), set)!.id.slice(1))]++;
              const min = Math.min(...inFlight);
              const excess = Math.max(...inFlight) - min - (Math.max(abs, (rel - 1) * min) + 1);
              if (excess > worstExcess) worstExcess = excess;
            }
            expect(worstExcess).toBeLessThanOrEqual(0);
          },
        ),
        { numRuns: 100 },
      );
    });
  });
});

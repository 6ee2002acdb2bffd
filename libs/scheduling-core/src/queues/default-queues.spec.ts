import { ClusterQueue, LocalQueue } from '@gpufleet/contracts';
import { definePoolShape, PoolShape } from '../validation/pool-shape';
import {
  defaultClusterQueueFor,
  defaultClusterQueueName,
  defaultLocalQueueFor,
  defaultPool,
  DefaultQueueState,
  MANAGED_BY_GPUFLEET,
  planDefaultQueues,
  poolCapacityCredits,
  routeLocalQueue,
} from './default-queues';

const ACCEL = 1_600_000;

function gpuPool(name: string, nodes: number, accelerators = 8, migAccelerators = 0): PoolShape {
  return definePoolShape({ name, acceleratorProduct: 'NVIDIA H100 80GB HBM3', nodeShapes: [{ accelerators, migAccelerators, vcpu: 224, memoryMib: 2 ** 21, nodes }] });
}

const cpuPool = definePoolShape({ name: 'cpu-epyc', nodeShapes: [{ accelerators: 0, migAccelerators: 0, vcpu: 384, memoryMib: 2 ** 20, nodes: 1 }] });
const h100 = gpuPool('h100', 2);
const mig = gpuPool('a100-mig', 1, 0, 8);

function adminQueue(name: string, pool: string): ClusterQueue {
  return ClusterQueue.fromPartial({ name, pool, nominalQuota: ACCEL });
}

function managedLq(namespace: string, clusterQueue: string): LocalQueue {
  return { namespace, name: 'default', clusterQueue, managedBy: MANAGED_BY_GPUFLEET };
}

function state(partial: Partial<DefaultQueueState>): DefaultQueueState {
  return { pools: [], clusterQueues: [], localQueues: [], busyClusterQueues: new Set(), busyLocalQueues: new Set(), ...partial };
}

describe('default queues', () => {
  describe('a pool that appears', () => {
    it('gets default-<pool>, marked as managed, with the pool capacity as quota', () => {
      const cq = defaultClusterQueueFor(h100);
      expect(cq).toMatchObject({ name: 'default-h100', pool: 'h100', nominalQuota: 16 * ACCEL, managedBy: MANAGED_BY_GPUFLEET, packing: 'binpack', fairSharingWeight: 1 });
      expect(planDefaultQueues(state({ pools: [h100] })).putClusterQueues).toEqual([cq]);
    });

    it('counts MIG-enabled accelerators, and the vCPU of a CPU-only pool', () => {
      expect(poolCapacityCredits(mig)).toBe(8 * ACCEL);
      expect(poolCapacityCredits(cpuPool)).toBe(384 * 100_000);
    });

    it('keeps a long pool name a valid label, distinct per pool', () => {
      const long = 'x'.repeat(60);
      const name = defaultClusterQueueName(long);
      expect(name.length).toBeLessThanOrEqual(63);
      expect(name).toMatch(/^default-x+-[0-9a-f]{8}$/);
      expect(defaultClusterQueueName(`${long}y`)).not.toBe(name);
    });
  });

  describe('a pool that grows or shrinks', () => {
    it('resizes its default queue and leaves an up-to-date one alone', () => {
      const old = defaultClusterQueueFor(gpuPool('h100', 1));
      expect(planDefaultQueues(state({ pools: [h100], clusterQueues: [old] })).putClusterQueues).toEqual([defaultClusterQueueFor(h100)]);
      expect(planDefaultQueues(state({ pools: [h100], clusterQueues: [defaultClusterQueueFor(h100)] }))).toEqual({ putClusterQueues: [], putLocalQueues: [], deleteClusterQueues: [] });
    });

    it('removes the default queue of a pool whose nodes are all gone, once idle', () => {
      const old = defaultClusterQueueFor(h100);
      expect(planDefaultQueues(state({ clusterQueues: [old] })).deleteClusterQueues).toEqual(['default-h100']);
      expect(planDefaultQueues(state({ clusterQueues: [old], busyClusterQueues: new Set(['default-h100']) })).deleteClusterQueues).toEqual([]);
    });
  });

  describe("an administrator's own queue for the pool", () => {
    it('replaces the default one: no default is created, an idle one is deleted', () => {
      expect(planDefaultQueues(state({ pools: [h100], clusterQueues: [adminQueue('gpus', 'h100')] })).putClusterQueues).toEqual([]);
      const plan = planDefaultQueues(state({ pools: [h100], clusterQueues: [adminQueue('gpus', 'h100'), defaultClusterQueueFor(h100)] }));
      expect(plan.deleteClusterQueues).toEqual(['default-h100']);
    });

    it('keeps the default one while workloads hold it', () => {
      const plan = planDefaultQueues(state({ pools: [h100], clusterQueues: [adminQueue('gpus', 'h100'), defaultClusterQueueFor(h100)], busyClusterQueues: new Set(['default-h100']) }));
      expect(plan.deleteClusterQueues).toEqual([]);
    });

    it('takes over idle default LocalQueues, then the default queue goes', () => {
      const queues = [adminQueue('gpus', 'h100'), defaultClusterQueueFor(h100)];
      const plan = planDefaultQueues(state({ pools: [h100], clusterQueues: queues, localQueues: [managedLq('default', 'default-h100'), managedLq('busy', 'default-h100')], busyLocalQueues: new Set(['busy/default']) }));
      expect(plan.putLocalQueues).toEqual([managedLq('default', 'gpus')]);
      expect(plan.deleteClusterQueues).toEqual([]); // busy/default still points at it
      const later = planDefaultQueues(state({ pools: [h100], clusterQueues: queues, localQueues: [managedLq('default', 'gpus'), managedLq('busy', 'gpus')] }));
      expect(later.deleteClusterQueues).toEqual(['default-h100']);
    });

    it('is never overwritten, even when it has taken the default name', () => {
      const adopted = adminQueue('default-h100', 'h100');
      expect(planDefaultQueues(state({ pools: [h100], clusterQueues: [adopted] }))).toEqual({ putClusterQueues: [], putLocalQueues: [], deleteClusterQueues: [] });
    });

    it('leaves LocalQueues written through the API where they point', () => {
      const own: LocalQueue = { namespace: 'team-a', name: 'default', clusterQueue: 'default-h100' };
      const plan = planDefaultQueues(state({ pools: [h100], clusterQueues: [adminQueue('gpus', 'h100'), defaultClusterQueueFor(h100)], localQueues: [own] }));
      expect(plan).toEqual({ putClusterQueues: [], putLocalQueues: [], deleteClusterQueues: [] });
    });
  });

  describe('the default LocalQueue of a namespace', () => {
    it('admits into the pool with the most whole-usable accelerators', () => {
      expect(defaultPool([cpuPool, mig, gpuPool('l40s', 1, 4), h100])?.name).toBe('h100');
      expect(defaultPool([cpuPool, mig])?.name).toBe('a100-mig');
      expect(defaultPool([cpuPool])?.name).toBe('cpu-epyc');
    });

    it('points at the default ClusterQueue, to be created with it when the leader has not yet', () => {
      expect(defaultLocalQueueFor('team-x', [h100, cpuPool], [])).toEqual({ ok: true, localQueue: managedLq('team-x', 'default-h100'), clusterQueue: defaultClusterQueueFor(h100) });
      expect(defaultLocalQueueFor('team-x', [h100], [defaultClusterQueueFor(h100)])).toEqual({ ok: true, localQueue: managedLq('team-x', 'default-h100') });
    });

    it("points at the administrator's queue of that pool when there is one", () => {
      const res = defaultLocalQueueFor('team-x', [h100], [defaultClusterQueueFor(h100), adminQueue('zz', 'h100'), adminQueue('gpus', 'h100')]);
      expect(res).toEqual({ ok: true, localQueue: managedLq('team-x', 'gpus') });
    });

    it('cannot be made before any node has reported, and says so', () => {
      const res = defaultLocalQueueFor('team-x', [], []);
      expect(res.ok).toBe(false);
      expect(!res.ok && res.expected).toMatch(/created on first use once a node has reported/);
    });
  });

  describe('routing a workload through its LocalQueue', () => {
    const h100Default = defaultClusterQueueFor(h100);
    const l40sDefault = defaultClusterQueueFor(gpuPool('l40s', 1, 4));
    const lookup = (...queues: ClusterQueue[]) => ({ get: (n: string) => queues.find((q) => q.name === n), all: () => queues });

    it("the default LocalQueue admits a workload sized for another pool through that pool's queue", () => {
      const route = routeLocalQueue(managedLq('team-a', h100Default.name), 'l40s', lookup(h100Default, l40sDefault));
      expect(route).toEqual({ ok: true, clusterQueue: l40sDefault });
    });

    it("an administrator's queue of that pool is preferred over its default one", () => {
      const own = adminQueue('l40s-team', 'l40s');
      const route = routeLocalQueue(managedLq('team-a', h100Default.name), 'l40s', lookup(h100Default, l40sDefault, own));
      expect(route.ok && route.clusterQueue.name).toBe('l40s-team');
    });

    it('a workload that names no pool goes where the default LocalQueue points', () => {
      const route = routeLocalQueue(managedLq('team-a', h100Default.name), undefined, lookup(h100Default, l40sDefault));
      expect(route.ok && route.clusterQueue.name).toBe(h100Default.name);
    });

    it('a pool no queue serves yet is refused, saying when its queue appears', () => {
      const route = routeLocalQueue(managedLq('team-a', h100Default.name), 'l40s', lookup(h100Default));
      expect(route).toMatchObject({ ok: false, got: '"default", and no ClusterQueue serves pool "l40s"' });
      expect(!route.ok && route.expected).toMatch(/created once the pool has nodes/);
    });

    it("an administrator's LocalQueue does not route by pool: a workload of another pool is refused", () => {
      const lq: LocalQueue = { namespace: 'team-a', name: 'gpus', clusterQueue: 'h100-team' };
      const route = routeLocalQueue(lq, 'l40s', lookup(adminQueue('h100-team', 'h100'), l40sDefault));
      expect(route).toEqual({
        ok: false,
        expected: `a LocalQueue that admits into pool "l40s" (the pool of the workload's InstanceType)`,
        got: '"gpus" → ClusterQueue "h100-team" of pool "h100"',
      });
      expect(routeLocalQueue(lq, 'h100', lookup(adminQueue('h100-team', 'h100'))).ok).toBe(true);
    });

    it('a LocalQueue whose ClusterQueue is gone is refused', () => {
      expect(routeLocalQueue({ namespace: 'a', name: 'q', clusterQueue: 'gone' }, undefined, lookup())).toMatchObject({ ok: false, expected: 'a LocalQueue whose ClusterQueue exists' });
    });
  });
});

/**
 * The pending workloads of one ClusterQueue, in admission order, with failed ones set aside
 * ("parked") until something they wait for changes, so a cycle only looks at workloads that
 * might now be admitted:
 *   ready    candidates, a heap in admission order (StrictFIFO keeps a failed head here: it blocks)
 *   quota    failed the Quota gate: a heap by credits, let out once the queue's headroom reaches them
 *   devices  failed DeviceFit/Placement: let out when the pool's device epoch moves (something freed)
 *   config   failed Validation: let out when queue objects or pool shapes change
 * A workload is in exactly one place. Entries carry a ticket: moving or removing a workload
 * bumps its ticket, so older entries are dropped lazily when met instead of searched for.
 */
import { Heap } from '../queues/heap';
import { admissionOrder, QueueSlot, WorkloadRecord } from './workload-record';

interface Entry {
  readonly record: WorkloadRecord;
  readonly ticket: number;
}

const live = (e: Entry): boolean => e.ticket === e.record.ticket && e.record.state === 'pending';
const inAdmissionOrder = (a: Entry, b: Entry): boolean => admissionOrder(a.record, b.record);
const byCredits = (a: Entry, b: Entry): boolean =>
  a.record.credits !== b.record.credits ? a.record.credits < b.record.credits : admissionOrder(a.record, b.record);

export class PendingQueue {
  private readonly ready = new Heap<Entry>(inAdmissionOrder);
  private readonly quota = new Heap<Entry>(byCredits);
  /** Parked in epoch order (epochs only grow), so the first one tells whether any is due. */
  private devices: Entry[] = [];
  private config: Entry[] = [];
  private configRevision = -1;

  constructor(readonly clusterQueue: string) {}

  /** Enqueues (or requeues) a pending workload as a candidate. */
  add(record: WorkloadRecord): void {
    this.ready.push(this.place(record, 'ready'));
  }

  /** Drops the workload from wherever it is (it was admitted, finished or deleted). */
  remove(record: WorkloadRecord): void {
    const top = this.ready.peek();
    if (top && top.record === record && top.ticket === record.ticket) this.ready.pop();
    record.ticket++;
    record.slot = undefined;
  }

  /** The best candidate, dropping entries that left. */
  head(): WorkloadRecord | undefined {
    for (;;) {
      const top = this.ready.peek();
      if (!top) return undefined;
      if (live(top)) return top.record;
      this.ready.pop();
    }
  }

  /** Sets a failed candidate aside by what it waits for. */
  park(record: WorkloadRecord, slot: Exclude<QueueSlot, 'ready'>, deviceEpoch: number): void {
    this.remove(record);
    if (slot === 'quota') this.quota.push(this.place(record, slot));
    else if (slot === 'config') this.config.push(this.place(record, slot));
    else {
      record.parkedAtEpoch = deviceEpoch;
      this.devices.push(this.place(record, slot));
    }
  }

  /**
   * Lets parked workloads back in where their cause may have gone. Cost: O(1) when nothing
   * changed, otherwise proportional to the workloads let out.
   */
  release(configRevision: number, deviceEpoch: number, headroom: () => number): void {
    if (configRevision !== this.configRevision) {
      this.configRevision = configRevision;
      this.unparkAll();
      return;
    }
    if (this.devices.length > 0 && this.devices[0].record.parkedAtEpoch !== deviceEpoch) {
      const still: Entry[] = [];
      for (const e of this.devices) {
        if (!live(e)) continue;
        if (e.record.parkedAtEpoch === deviceEpoch) still.push(e);
        else this.add(e.record);
      }
      this.devices = still;
    }
    let room: number | undefined;
    for (let top = this.quota.peek(); top; top = this.quota.peek()) {
      if (live(top)) {
        room ??= headroom();
        if (top.record.credits > room) break;
        this.add(top.record);
      }
      this.quota.pop();
    }
  }

  /** Every parked workload back to the candidates (queue objects or pool shapes changed). */
  unparkAll(): void {
    const parked = [...this.devices, ...this.config];
    for (let e = this.quota.pop(); e; e = this.quota.pop()) parked.push(e);
    this.devices = [];
    this.config = [];
    for (const e of parked) if (live(e)) this.add(e.record);
  }

  /** 1-based position of `record` among this queue's pending workloads in admission order. O(n). */
  positionOf(record: WorkloadRecord): number {
    let ahead = 0;
    const count = (e: Entry): void => {
      if (e.record !== record && live(e) && admissionOrder(e.record, record)) ahead++;
    };
    for (const e of this.ready.values()) count(e);
    for (const e of this.quota.values()) count(e);
    for (const e of this.devices) count(e);
    for (const e of this.config) count(e);
    return ahead + 1;
  }

  private place(record: WorkloadRecord, slot: QueueSlot): Entry {
    record.ticket++;
    record.slot = slot;
    return { record, ticket: record.ticket };
  }
}

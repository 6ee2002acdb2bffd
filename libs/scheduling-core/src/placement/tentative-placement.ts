/**
 * Pods held while one tryPlace (or commit) works out a whole workload. Holding applies the pod
 * to the live node state and indexes, so later pods of the same workload see it and cannot
 * double-book; undoing applies it back with the opposite sign, which restores them exactly.
 */
import type { PodPlacement } from '@gpufleet/contracts';
import type { NodeState } from './node-state';

export type ApplyPod = (node: NodeState, pod: PodPlacement, sign: 1 | -1) => void;

export interface HeldPod {
  readonly node: NodeState;
  readonly pod: PodPlacement;
}

export class TentativePlacement {
  readonly held: HeldPod[] = [];

  constructor(private readonly apply: ApplyPod) {}

  hold(node: NodeState, pod: PodPlacement): void {
    this.apply(node, pod, 1);
    this.held.push({ node, pod });
  }

  /** A point to undo back to. */
  mark(): number {
    return this.held.length;
  }

  undoTo(mark: number): void {
    while (this.held.length > mark) {
      const { node, pod } = this.held.pop() as HeldPod;
      this.apply(node, pod, -1);
    }
  }
}

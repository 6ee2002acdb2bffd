// Wires a QueueManager, an AdmissionController and the test Placer, and plays the scheduler
// app's part: every admit decision is "written to the ledger" and confirmed.
import type { WorkloadSpec } from '@gpufleet/contracts';
import { QueueManager } from '../../queues/queue-manager';
import type { PoolShape } from '../../validation/pool-shape';
import { AdmissionController } from '../admission-controller';
import type { AdmissionDecision } from '../decisions';
import { WholeAcceleratorPlacer } from './whole-accelerator-placer';
import { h100Pool } from './workloads';

export interface Harness {
  queues: QueueManager;
  placer: WholeAcceleratorPlacer;
  controller: AdmissionController;
  /** Submits and expects acceptance. */
  submit(spec: WorkloadSpec): void;
  /** One cycle, every admit confirmed; returns the decisions. */
  admit(): AdmissionDecision[];
  /** Keys admitted by one confirmed cycle, in decision order. */
  admittedKeys(): string[];
}

export function harness(options: { pools?: PoolShape[]; nodes?: Record<string, number> } = {}): Harness {
  const pools = options.pools ?? [h100Pool('h100', options.nodes?.h100 ?? 4)];
  const queues = new QueueManager({ poolExists: (p) => pools.some((s) => s.name === p) });
  const placer = new WholeAcceleratorPlacer();
  for (const pool of pools) placer.addNodes(pool.name, options.nodes?.[pool.name] ?? pool.nodeShapes.reduce((s, n) => s + n.nodes, 0));
  let clock = Date.UTC(2025, 0, 1);
  const controller = new AdmissionController({ placer, queues, pools, clock: () => new Date(clock++) });
  const h: Harness = {
    queues,
    placer,
    controller,
    submit(spec) {
      const result = controller.submit(spec);
      if (!result.accepted) throw new Error(result.message);
    },
    admit() {
      const { decisions } = controller.cycle();
      for (const d of decisions) {
        if (d.kind !== 'admit') continue;
        const confirmed = controller.confirmAdmission(d.key, d.placements);
        if (!confirmed.ok) throw new Error(confirmed.message);
      }
      return decisions;
    },
    admittedKeys() {
      return h.admit().filter((d) => d.kind === 'admit').map((d) => d.key);
    },
  };
  return h;
}

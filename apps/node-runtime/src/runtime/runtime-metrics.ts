import { createCounter, createGauge, type Counter, type Registry } from '@gpufleet/observability';
import type { PodRuntimeStatus } from '@gpufleet/contracts';

const STATES = ['Starting', 'Running', 'Ready', 'Backoff', 'Stopping', 'Stopped', 'Failed'] as const;

/** The node runtime's series on /metrics. */
export class NodeRuntimeMetrics {
  /** Restarts of pod processes after a crash or a failed start (not runtime restarts, not replacements). */
  readonly restarts: Counter<'namespace' | 'workload'>;

  constructor(registry: Registry, pods: () => readonly PodRuntimeStatus[]) {
    createGauge<'state'>(registry, {
      name: 'node_runtime_pods',
      help: 'Pods on this node by state.',
      labelNames: ['state'],
      // Counted at scrape time from the live table, so it can never drift from what runs.
      collect() {
        const counts = new Map<string, number>(STATES.map((s) => [s, 0]));
        for (const pod of pods()) counts.set(pod.state, (counts.get(pod.state) ?? 0) + 1);
        this.reset();
        for (const [state, n] of counts) this.set({ state }, n);
      },
    });
    this.restarts = createCounter(registry, {
      name: 'node_runtime_restarts_total',
      help: 'Restarts of pod processes (engines, sshd, instance commands) after they exited.',
      labelNames: ['namespace', 'workload'],
    });
  }
}

/**
 * Why a workload is still pending, gate by gate: the gates before the one that stopped it
 * passed, that one failed with its reason, and the ones after were not reached.
 */
import type { AdmissionGate } from '@gpufleet/contracts';
import { GATES, GateName, WorkloadRecord } from './workload-record';

export interface QueueingContext {
  /** 1-based position among the ClusterQueue's pending workloads; 0 when not queued. */
  readonly position: number;
  readonly strictFifo: boolean;
  /** The workload at the front of the ClusterQueue, when it is not this one. */
  readonly head: WorkloadRecord | undefined;
}

const passed = (gate: GateName, message: string): AdmissionGate => ({ gate, passed: true, reason: 'Passed', message });
const notReached = (gate: GateName, before: GateName): AdmissionGate => ({
  gate,
  passed: false,
  reason: 'NotReached',
  message: `not evaluated: the ${before} gate stopped the workload first`,
});

export function pendingGates(record: WorkloadRecord, queueing: QueueingContext): AdmissionGate[] {
  const failure = record.failure;
  if (!failure) {
    const message =
      queueing.strictFifo && queueing.head
        ? `waiting in ClusterQueue ${JSON.stringify(record.clusterQueue)} at position ${queueing.position}; StrictFIFO: ${queueing.head.key} at the head must be admitted first`
        : `waiting in ClusterQueue ${JSON.stringify(record.clusterQueue)} at position ${queueing.position} for the next admission cycle`;
    return [
      passed('Validation', 'the workload is valid for its pool'),
      { gate: 'Quota', passed: false, reason: 'Queued', message },
      notReached('DeviceFit', 'Quota'),
      notReached('Placement', 'Quota'),
    ];
  }
  const failedAt = GATES.indexOf(failure.gate);
  return GATES.map((gate, i): AdmissionGate => {
    if (i < failedAt) return passed(gate, passedMessage(gate, record));
    if (i === failedAt) return { gate, passed: false, reason: failure.reason, message: failure.message };
    return notReached(gate, failure.gate);
  });
}

function passedMessage(gate: GateName, record: WorkloadRecord): string {
  switch (gate) {
    case 'Validation':
      return 'the workload is valid for its pool';
    case 'Quota':
      return `${record.credits.toLocaleString('en-US')} credits fit ClusterQueue ${JSON.stringify(record.clusterQueue)}`;
    case 'DeviceFit':
      return `pool ${JSON.stringify(record.pool)} has free devices of the requested kind`;
    default:
      return 'placed';
  }
}

/** Gates of a workload past admission: all passed. */
export function admittedGates(record: WorkloadRecord): AdmissionGate[] {
  return GATES.map((gate) => passed(gate, passedMessage(gate, record)));
}

import type { TopologyPlacement } from '@gpufleet/contracts';
import type { HostInfo, HostInfoSource } from '../host/host-info';
import type { DetectionResult, DeviceProvider } from '../provider';
import type { Fleet, FleetNode } from './fleet-types';
import { findFleetNode, simulatedDetection, simulatedHostInfo } from './simulated-inventory';

/**
 * Reports one node of a fleet file as if its devices were real, so the agent, scheduler and
 * everything downstream run unchanged on a machine without GPUs. It also stands in for the
 * host provider (CPU, memory, OS of the simulated node).
 */
export class SimulatedProvider implements DeviceProvider, HostInfoSource {
  readonly name = 'simulated';
  readonly node: FleetNode;
  private failure: string | undefined;
  private detection: DetectionResult | undefined;

  constructor(
    private readonly fleet: Fleet,
    nodeName: string,
  ) {
    this.node = findFleetNode(fleet, nodeName);
  }

  get topology(): TopologyPlacement {
    return { ...this.node.topology };
  }

  /** The node's own labels from the fleet file. */
  get nodeLabels(): Record<string, string> {
    return { ...this.node.labels };
  }

  /**
   * Makes the following passes fail with `reason` (as a crashed vendor tool would) until
   * called again without one; for demos and tests of the keep-last-good behaviour.
   */
  simulateFailure(reason?: string): void {
    this.failure = reason;
  }

  async available(): Promise<boolean> {
    return true;
  }

  async detect(): Promise<DetectionResult> {
    if (this.failure !== undefined) throw new Error(this.failure);
    // A simulated node's devices never change: generated once, then the same frozen result every
    // pass (an agent presenting 1,000 nodes would otherwise rebuild 1,000 of them per interval).
    return (this.detection ??= deepFreeze(simulatedDetection(this.fleet, this.node)));
  }

  async readHostInfo(): Promise<HostInfo> {
    return simulatedHostInfo(this.node);
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

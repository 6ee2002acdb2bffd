import { fleetNodeList, listNames, type Fleet } from '@gpufleet/device-inventory';
import type { AgentConfig } from '../config';

/** SIMULATED_NODES's word for every node of the fleet file. */
export const EVERY_FLEET_NODE = '*';

/** The nodes one agent process presents, and with the simulated provider the fleet they come from. */
export interface PresentedNodes {
  /** NODE_NAME alone, unless SIMULATED_NODES names more. */
  readonly names: readonly string[];
  /** Loaded when GPUFLEET_PROVIDERS=simulated. */
  readonly fleet?: Fleet;
  readonly fleetFile?: string;
}

export type PresentedNodesConfig = Pick<AgentConfig, 'GPUFLEET_CLUSTER' | 'GPUFLEET_PROVIDERS' | 'GPUFLEET_FLEET_FILE' | 'NODE_NAME' | 'SIMULATED_NODES'>;

/**
 * Which nodes this agent reports. Checks the combinations the schema cannot: "simulated" alone,
 * with a fleet file of this cluster, and SIMULATED_NODES only with it.
 */
export async function presentedNodes(config: PresentedNodesConfig, loadFleet: (path: string) => Promise<Fleet>): Promise<PresentedNodes> {
  const providers = new Set<string>(config.GPUFLEET_PROVIDERS);
  if (!providers.has('simulated')) {
    if (config.SIMULATED_NODES.length > 0) {
      throw new Error(`SIMULATED_NODES: only valid with GPUFLEET_PROVIDERS=simulated, not "${config.GPUFLEET_PROVIDERS.join(',')}"; unset it to report NODE_NAME`);
    }
    return { names: [config.NODE_NAME] };
  }
  if (providers.size > 1) throw new Error('GPUFLEET_PROVIDERS: "simulated" cannot be combined with other providers');
  const file = config.GPUFLEET_FLEET_FILE;
  if (!file) throw new Error('GPUFLEET_FLEET_FILE: required when GPUFLEET_PROVIDERS=simulated');
  const fleet = await loadFleet(file);
  if (fleet.cluster !== config.GPUFLEET_CLUSTER) {
    throw new Error(`GPUFLEET_CLUSTER is "${config.GPUFLEET_CLUSTER}" but the fleet file describes cluster "${fleet.cluster}"`);
  }
  const names = config.SIMULATED_NODES.length === 0 ? [config.NODE_NAME] : selectFleetNodes(fleet, config.SIMULATED_NODES, file);
  return { names, fleet, fleetFile: file };
}

/** SIMULATED_NODES resolved against the fleet: "*" is every node in file order, names keep their order (once each). */
export function selectFleetNodes(fleet: Fleet, requested: readonly string[], file: string): string[] {
  if (requested.includes(EVERY_FLEET_NODE)) {
    if (requested.length > 1) throw new Error(`SIMULATED_NODES: "${EVERY_FLEET_NODE}" already means every node of ${file}; give "${EVERY_FLEET_NODE}" or node names, not both`);
    return fleet.nodes.map((n) => n.name);
  }
  const known = new Set(fleet.nodes.map((n) => n.name));
  const names = [...new Set(requested)];
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw new Error(
      `SIMULATED_NODES: the fleet file ${file} has no node${unknown.length === 1 ? '' : 's'} ${listNames(unknown.map((n) => JSON.stringify(n)))}; ` +
        `its nodes are ${fleetNodeList(fleet)} ("${EVERY_FLEET_NODE}" presents them all)`,
    );
  }
  return names;
}

/** `device-discovery@h100-0`, or for many nodes `device-discovery@h100-0+999` (the first and how many more). */
export function natsConnectionName(names: readonly string[]): string {
  return names.length === 1 ? `device-discovery@${names[0]}` : `device-discovery@${names[0]}+${names.length - 1}`;
}

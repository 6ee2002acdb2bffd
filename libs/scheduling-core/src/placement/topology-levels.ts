/**
 * Topology levels, narrowest first. A node's domain at a level comes from its inventory's
 * topology; an empty value makes the node its own domain at that level (it shares nothing).
 */
import type { NodeInventory } from '@gpufleet/contracts';

export const TOPOLOGY_LEVELS = ['node', 'nvlink-domain', 'rack', 'zone'] as const;
export type TopologyLevel = (typeof TOPOLOGY_LEVELS)[number];

/** Index into TOPOLOGY_LEVELS; -1 for an empty or unknown level. */
export function topologyLevelIndex(level: string): number {
  return (TOPOLOGY_LEVELS as readonly string[]).indexOf(level);
}

/** Prefix of the key of a domain that is just one node, so it cannot collide with a label value. */
const OWN_DOMAIN = '\u0000';

/** The node's domain key at every level, indexed like TOPOLOGY_LEVELS. */
export function domainKeysOf(inventory: NodeInventory): string[] {
  const name = inventory.nodeName;
  const own = (value: string | undefined): string => (value ? value : `${OWN_DOMAIN}${name}`);
  const topology = inventory.topology;
  return [name, own(topology?.nvlinkDomain), own(topology?.rack), own(topology?.zone)];
}

/** How a domain is named in messages: "rack r-07", or "node h100-3" for a node alone at that level. */
export function domainLabel(levelIndex: number, key: string): string {
  if (key.startsWith(OWN_DOMAIN)) return `node ${key.slice(OWN_DOMAIN.length)} (no ${TOPOLOGY_LEVELS[levelIndex]} label)`;
  return `${TOPOLOGY_LEVELS[levelIndex]} ${key}`;
}

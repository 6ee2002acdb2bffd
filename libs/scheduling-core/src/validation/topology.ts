/** Topology levels a pod set may ask its replicas to share, narrowest first. */
export const TOPOLOGY_LEVELS = ['node', 'nvlink-domain', 'rack', 'zone'] as const;
export type TopologyLevel = (typeof TOPOLOGY_LEVELS)[number];

export function isTopologyLevel(value: string): value is TopologyLevel {
  return (TOPOLOGY_LEVELS as readonly string[]).includes(value);
}

/** 0 for node … 3 for zone; wider levels contain narrower ones. */
export function topologyRank(level: TopologyLevel): number {
  return TOPOLOGY_LEVELS.indexOf(level);
}

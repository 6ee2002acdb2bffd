// Node flags per service, placed before the preloads (`node <flags> -r reflect-metadata …`): the
// one list that `gpufleet up`, the images and the startup benchmark give each process. A service
// not listed runs with Node's defaults. Measured with `npm run bench -- startup` (numbers in
// docs/operations.md, "Memory per component").

/**
 * The node-side processes (one agent and one runtime on every GPU node) are small and mostly
 * idle, so they trade a little GC work for resident memory, with a hard bound:
 *
 * - `--max-semi-space-size=1`: a 1 MiB young generation instead of V8's 16 MiB semi-spaces,
 *   which a busy start-up fills and which then stay resident (13-20 MiB of RSS). Scavenges of a
 *   1 MiB nursery take well under a millisecond, and these processes allocate little.
 * - `--v8-pool-size=1`: one V8 background thread (GC, compilation) instead of four: about
 *   1.5 MiB less (thread stacks and their malloc arenas), no slower start on two cores.
 * - `--max-old-space-size=128`: the bound. Their heap holds about 20 MiB once ready (one node's
 *   inventory, its pods); a process that grows past 128 MiB has a leak and dies with "JavaScript
 *   heap out of memory" rather than squeezing the engines it serves. The runtime's pods keep
 *   running and the next runtime adopts them; a dead agent stops heartbeating, so its node turns
 *   NotReady until the agent is back.
 */
const NODE_SIDE = ['--max-semi-space-size=1', '--v8-pool-size=1', '--max-old-space-size=128'] as const;

export const NODE_FLAGS: Readonly<Record<string, readonly string[]>> = {
  // A fixed 64 MiB young generation: small, growing semi-spaces make frequent scavenges that
  // show up as admission-latency tails (see apps/scheduler/Dockerfile).
  scheduler: ['--min-semi-space-size=64', '--max-semi-space-size=64'],
  'device-discovery': NODE_SIDE,
  'node-runtime': NODE_SIDE,
};

/** The flags `app` runs with (none for a service not listed). */
export function nodeFlagsOf(app: string): string[] {
  return [...(NODE_FLAGS[app] ?? [])];
}

import { mkdirSync, rmSync, writeFileSync } from 'fs';
import { join } from 'path';
import { NatsIdentitySpec, createNkeyUser, natsAuthorizationConfig, natsPermissions } from '@gpufleet/messaging';

/** One NATS identity of the stack: one per process (`scheduler`, `router`, `agent-h100-0+4`, …). */
export interface StackIdentity {
  name: string;
  spec: NatsIdentitySpec;
}

export interface NatsAuthFiles {
  /** The nats-server configuration holding the users' public keys and permissions. */
  configFile: string;
  /** The nkey seed file of each identity by name (NATS_NKEY_SEED_FILE of its process). */
  seedFiles: ReadonlyMap<string, string>;
}

/** The identity of the agent or node runtime process of one group of nodes (`agent-h100-0+4`). */
export function nodeIdentityName(component: 'agent' | 'runtime', groupLabel: string): string {
  return `${component}-${groupLabel}`;
}

/**
 * One NATS identity per process of the stack, each allowed only what that process writes
 * (docs/security.md): the scheduler is the control plane, and each group of nodes has one agent
 * and one node runtime process whose identities cover exactly the group's nodes.
 */
export function stackIdentities(groups: readonly { label: string; nodes: readonly string[] }[]): StackIdentity[] {
  return [
    { name: 'scheduler', spec: { component: 'control' } },
    { name: 'router', spec: { component: 'router' } },
    // One process for both roles and every node's cache.
    { name: 'model-delivery', spec: { component: 'delivery', control: true, nodes: '*' } },
    ...groups.flatMap(({ label, nodes }): StackIdentity[] => [
      { name: nodeIdentityName('agent', label), spec: { component: 'agent', nodes } },
      { name: nodeIdentityName('runtime', label), spec: { component: 'runtime', nodes } },
    ]),
  ];
}

/** Where `up` keeps the NATS authorization of a stack: `<home>/nats-auth`. */
export function natsAuthDir(home: string): string {
  return join(home, 'nats-auth');
}

/**
 * Writes a fresh nkey per identity (seed files 0600 in a 0700 directory) and the nats-server
 * configuration that admits exactly those public keys with their permissions. Written anew on
 * every `up`: the server and every process of the stack start together, so nothing outlives a
 * run that would need the old seeds, and a seed that leaked from an earlier run is worthless.
 */
export function writeNatsAuth(home: string, cluster: string, identities: readonly StackIdentity[]): NatsAuthFiles {
  const dir = natsAuthDir(home);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const seedFiles = new Map<string, string>();
  const users = identities.map(({ name, spec }) => {
    if (seedFiles.has(name)) throw new Error(`NATS identity "${name}" is defined twice`);
    const { seed, publicKey } = createNkeyUser();
    const file = join(dir, `${name}.nk`);
    writeFileSync(file, seed + '\n', { mode: 0o600 });
    seedFiles.set(name, file);
    return { nkey: publicKey, permissions: natsPermissions(spec, cluster, publicKey) };
  });
  const configFile = join(dir, 'nats-server.conf');
  const header = '# Written by `gpufleet up` for this stack (docs/security.md); public keys only, the seeds are beside it.\n';
  writeFileSync(configFile, header + natsAuthorizationConfig(users), { mode: 0o600 });
  return { configFile, seedFiles };
}

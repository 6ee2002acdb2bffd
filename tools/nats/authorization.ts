/**
 * The NATS side of per-component identities for a cluster that gpufleet does not start itself
 * (Helm, a shared NATS): writes one nkey seed per component into a directory (0600, for the
 * Kubernetes Secrets that `<component>.natsAuth` names) and prints the nats-server
 * `authorization` block that admits their public keys with their permissions (docs/security.md).
 *
 *   node -r @swc-node/register tools/nats/authorization.ts --cluster dev --out ./nats-identities > authorization.conf
 *
 * The agents and node runtimes get one identity each for every node ('*'), as a DaemonSet
 * shares one Secret; `gpufleet up` gives each process an identity for its own nodes instead.
 */
import { mkdirSync, writeFileSync } from 'fs';
import { join } from 'path';
import { NatsIdentitySpec, createNkeyUser, natsAuthorizationConfig, natsPermissions } from '@gpufleet/messaging';

const COMPONENTS: Record<string, NatsIdentitySpec> = {
  scheduler: { component: 'control' },
  'device-discovery': { component: 'agent', nodes: '*' },
  'node-runtime': { component: 'runtime', nodes: '*' },
  'inference-router': { component: 'router' },
  // The control role (a Deployment) and the node caches (a DaemonSet) as separate credentials.
  'model-delivery': { component: 'delivery', control: true, nodes: [] },
  'model-cache': { component: 'delivery', control: false, nodes: '*' },
};

function arg(name: string): string {
  const i = process.argv.indexOf(name);
  const value = i >= 0 ? process.argv[i + 1] : undefined;
  if (!value) {
    process.stderr.write(`usage: authorization.ts --cluster <name> --out <directory>   (missing ${name})\n`);
    process.exit(2);
  }
  return value;
}

const cluster = arg('--cluster');
const out = arg('--out');
mkdirSync(out, { recursive: true, mode: 0o700 });
const users = Object.entries(COMPONENTS).map(([name, spec]) => {
  const { seed, publicKey } = createNkeyUser();
  writeFileSync(join(out, `${name}.nk`), seed + '\n', { mode: 0o600 });
  return { nkey: publicKey, permissions: natsPermissions(spec, cluster, publicKey) };
});
process.stdout.write(`# gpufleet cluster "${cluster}": ${Object.keys(COMPONENTS).join(', ')} (seeds in ${out})\n`);
process.stdout.write(natsAuthorizationConfig(users));

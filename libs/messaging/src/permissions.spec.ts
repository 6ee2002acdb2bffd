import { NatsIdentitySpec, NatsPermissions, SubjectRules, inboxPrefixOf, natsAuthorizationConfig, natsPermissions } from './permissions';

const KEY = 'UAS6IJHFXR23BLCO4UB33ZQ56EJ6PZNJCV5AOKGYLH4GD5QRNOJNLVS5';

/** NATS subject matching: `*` one token, `>` one or more at the end. */
function matches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

/** What nats-server decides for a concrete subject: some allow matches and no deny does. */
function permits(rules: SubjectRules, subject: string): boolean {
  return rules.allow.some((a) => matches(a, subject)) && !rules.deny.some((d) => matches(d, subject));
}

const of = (spec: NatsIdentitySpec): NatsPermissions => natsPermissions(spec, 'dev', KEY);
const control = of({ component: 'control' });
const router = of({ component: 'router' });
const agent = of({ component: 'agent', nodes: ['h100-0', 'h100-1'] });
const runtime = of({ component: 'runtime', nodes: ['h100-0'] });
const nodeIdentities = { router, agent, runtime };

describe('natsPermissions', () => {
  it('lets an agent write the records of its own nodes and its device events, nothing else', () => {
    expect(permits(agent.publish, '$KV.gpufleet-dev-nodes.h100-0')).toBe(true);
    expect(permits(agent.publish, '$KV.gpufleet-dev-nodes.h100-1')).toBe(true);
    expect(permits(agent.publish, '$KV.gpufleet-dev-nodes.h100-2')).toBe(false);
    expect(permits(agent.publish, '$KV.gpufleet-dev-api-keys.k1')).toBe(false);
    expect(permits(agent.publish, '$KV.gpufleet-dev-pods.h100-0.a.b.c.0.0')).toBe(false);
    expect(permits(agent.publish, 'gpufleet.dev.devices.heartbeat.h100-0')).toBe(true);
    expect(permits(agent.publish, 'gpufleet.dev.devices.inventory.h100-1')).toBe(true);
    expect(permits(agent.publish, 'gpufleet.dev.devices.detection_failed.h100-1')).toBe(true);
    // Another node's heartbeat (a spoof that would keep a dead node Ready) is not its to send.
    expect(permits(agent.publish, 'gpufleet.dev.devices.heartbeat.h100-2')).toBe(false);
    expect(permits(agent.publish, 'gpufleet.dev.devices.heartbeat')).toBe(false);
    expect(permits(agent.publish, 'gpufleet.dev.router.usage')).toBe(false);
    expect(permits(agent.publish, 'gpufleet.other.devices.heartbeat.h100-0')).toBe(false);
    // What its own nodes' kubelets assigned (pod-resources), and no other node's.
    expect(permits(agent.publish, '$KV.gpufleet-dev-kubelet-devices.h100-0')).toBe(true);
    expect(permits(agent.publish, '$KV.gpufleet-dev-kubelet-devices.h100-2')).toBe(false);
    expect(permits(runtime.publish, '$KV.gpufleet-dev-kubelet-devices.h100-0')).toBe(false);
    // An agent of every node (Kubernetes, one identity for the DaemonSet) may send any node's.
    expect(permits(of({ component: 'agent', nodes: '*' }).publish, 'gpufleet.dev.devices.heartbeat.h100-2')).toBe(true);
  });

  it('lets a node runtime write pod status of its own nodes only, and read the buckets it follows', () => {
    expect(permits(runtime.publish, '$KV.gpufleet-dev-pods.h100-0.team.job.main.0.0')).toBe(true);
    expect(permits(runtime.publish, '$KV.gpufleet-dev-pods.h100-1.team.job.main.0.0')).toBe(false);
    expect(permits(runtime.publish, '$KV.gpufleet-dev-nodes.h100-0')).toBe(false);
    expect(permits(runtime.publish, '$KV.gpufleet-dev-workloads.team.job')).toBe(false);
    for (const bucket of ['nodes', 'ledger', 'workloads', 'pods', 'artifacts', 'artifact-nodes']) {
      expect(permits(runtime.publish, `$JS.API.CONSUMER.CREATE.KV_gpufleet-dev-${bucket}.abc.$KV.gpufleet-dev-${bucket}.>`)).toBe(true);
      expect(permits(runtime.publish, `$JS.API.DIRECT.GET.KV_gpufleet-dev-${bucket}`)).toBe(true);
    }
    expect(permits(runtime.publish, '$JS.API.DIRECT.GET.KV_gpufleet-dev-api-keys')).toBe(false);
    // It reads the copies its pods wait for, and never writes one: only delivery vouches for a tree.
    expect(permits(runtime.publish, '$KV.gpufleet-dev-artifact-nodes.h100-0.team.llama')).toBe(false);
    expect(permits(runtime.publish, '$JS.API.DIRECT.GET.KV_gpufleet-dev-artifact-manifests')).toBe(false);
  });

  it('lets only the router write api-keys (and create its bucket), and the router write usage', () => {
    expect(permits(router.publish, '$KV.gpufleet-dev-api-keys.k1')).toBe(true);
    expect(permits(router.publish, '$JS.API.STREAM.CREATE.KV_gpufleet-dev-api-keys')).toBe(true);
    expect(permits(router.publish, 'gpufleet.dev.router.usage')).toBe(true);
    expect(permits(router.publish, '$KV.gpufleet-dev-deployments.default.m')).toBe(false);
    expect(permits(control.publish, '$KV.gpufleet-dev-api-keys.k1')).toBe(false);
    expect(permits(control.publish, '$JS.API.STREAM.UPDATE.KV_gpufleet-dev-api-keys')).toBe(false);
    expect(permits(control.publish, '$KV.gpufleet-dev-deployments.default.m')).toBe(true);
  });

  it('lets no identity but the control plane delete, purge or update a stream, or create one it does not own', () => {
    for (const stream of ['KV_gpufleet-dev-nodes', 'KV_gpufleet-dev-api-keys', 'GPUFLEET_EVENTS']) {
      for (const op of ['DELETE', 'PURGE', 'UPDATE', 'MSG.DELETE']) {
        for (const perms of Object.values(nodeIdentities)) expect(permits(perms.publish, `$JS.API.STREAM.${op}.${stream}`)).toBe(false);
        expect(permits(control.publish, `$JS.API.STREAM.${op}.${stream}`)).toBe(stream.includes('api-keys') ? op !== 'UPDATE' : true);
      }
    }
    for (const perms of [agent, runtime]) expect(perms.publish.allow.some((s) => s.includes('STREAM.CREATE'))).toBe(false);
    expect(router.publish.allow.filter((s) => s.includes('STREAM.CREATE'))).toEqual(['$JS.API.STREAM.CREATE.KV_gpufleet-dev-api-keys']);
  });

  it('gives node identities their own inbox to subscribe to, and nothing else', () => {
    for (const perms of Object.values(nodeIdentities)) {
      expect(perms.subscribe.allow).toEqual([`${inboxPrefixOf(KEY)}.>`]);
      expect(permits(perms.subscribe, '_INBOX.>')).toBe(false);
      expect(permits(perms.subscribe, `_INBOX.${KEY}.abc`)).toBe(true);
    }
  });

  it('lets model delivery write artifacts and manifests (control) and its own nodes\' copies (caches), nothing of the scheduler\'s', () => {
    const both = of({ component: 'delivery', control: true, nodes: ['h100-0'] });
    const controlOnly = of({ component: 'delivery', control: true, nodes: [] });
    const cacheOnly = of({ component: 'delivery', control: false, nodes: ['h100-0'] });
    expect(permits(both.publish, '$KV.gpufleet-dev-artifacts.team.llama')).toBe(true);
    expect(permits(both.publish, '$KV.gpufleet-dev-artifact-manifests.ab12')).toBe(true);
    expect(permits(both.publish, '$KV.gpufleet-dev-leases.model-delivery')).toBe(true);
    expect(permits(both.publish, '$KV.gpufleet-dev-leases.scheduler')).toBe(false);
    expect(permits(both.publish, '$KV.gpufleet-dev-artifact-nodes.h100-0.team.llama')).toBe(true);
    expect(permits(both.publish, '$KV.gpufleet-dev-artifact-nodes.h100-1.team.llama')).toBe(false);
    expect(permits(cacheOnly.publish, '$KV.gpufleet-dev-artifacts.team.llama')).toBe(false);
    expect(permits(cacheOnly.publish, '$JS.API.STREAM.CREATE.KV_gpufleet-dev-artifacts')).toBe(false);
    expect(permits(controlOnly.publish, '$KV.gpufleet-dev-artifact-nodes.h100-0.team.llama')).toBe(false);
    expect(permits(controlOnly.publish, '$JS.API.STREAM.CREATE.KV_gpufleet-dev-artifacts')).toBe(true);
    for (const perms of [both, controlOnly, cacheOnly]) {
      expect(permits(perms.publish, '$JS.API.DIRECT.GET.KV_gpufleet-dev-artifacts')).toBe(true);
      for (const bucket of ['deployments', 'workloads', 'ledger', 'secrets', 'access-users', 'api-keys']) expect(permits(perms.publish, `$KV.gpufleet-dev-${bucket}.x.y`)).toBe(false);
      expect(permits(perms.publish, '$JS.API.STREAM.DELETE.KV_gpufleet-dev-artifacts')).toBe(false);
    }
  });

  it("covers every node with '*' (a DaemonSet's shared credential) but no other bucket", () => {
    const shared = of({ component: 'agent', nodes: '*' });
    expect(permits(shared.publish, '$KV.gpufleet-dev-nodes.any-node')).toBe(true);
    expect(permits(shared.publish, '$KV.gpufleet-dev-api-keys.k1')).toBe(false);
    const runtimes = of({ component: 'runtime', nodes: '*' });
    expect(permits(runtimes.publish, '$KV.gpufleet-dev-pods.any-node.a.b.c.0.0')).toBe(true);
  });
});

describe('natsAuthorizationConfig', () => {
  it('writes nkey users with quoted subjects, so nats-server takes `$KV…` literally', () => {
    const text = natsAuthorizationConfig([{ nkey: KEY, permissions: agent }]);
    expect(text.startsWith('authorization: {')).toBe(true);
    const parsed = JSON.parse(text.slice('authorization: '.length));
    expect(parsed.users).toEqual([{ nkey: KEY, permissions: { publish: { allow: agent.publish.allow, deny: agent.publish.deny }, subscribe: { allow: agent.subscribe.allow } } }]);
    expect(text).toContain('"$KV.gpufleet-dev-nodes.h100-0"');
    expect(text).not.toMatch(/seed|SU[A-Z2-7]{50}/);
  });
});

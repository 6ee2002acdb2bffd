import { execFileSync } from 'child_process';
import { mkdtempSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { Metadata, status, type Client, type ServiceError } from '@grpc/grpc-js';
import {
  AccessServiceClient,
  AccessTokenRecord,
  Buckets,
  Events,
  scopedSubjectOf,
  subjectOf,
  CapacityServiceClient,
  DeploymentServiceClient,
  InstanceServiceClient,
  ModelDeployment,
  QueueServiceClient,
  SchedulingServiceClient,
  GPUInstanceSpec,
  WorkloadSpec,
} from '@gpufleet/contracts';
import { callUnary, channelCredentials, clientOptions, iterateStream } from '@gpufleet/grpc-kit';
import { connect, JSONCodec, type NatsConnection } from 'nats';
import { KvStore, connectNats } from '@gpufleet/messaging';
import { RunningServer, sendBodySlowly, startHostileEngine, startNats, startRedis, waitFor, type HostileEngine } from '@gpufleet/testing';
import { UpProcess, gpufleet } from './support/cli';
import { DEV_FLEET, ServiceStack } from './support/services';

const ADMIN = 'e2e-bootstrap-admin-token-0123456789';

function bearer(token: string | undefined): Metadata {
  const md = new Metadata();
  if (token) md.set('authorization', `Bearer ${token}`);
  return md;
}

async function refusal(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('expected the call to be refused');
}

/** The first message of a watch, or the status that ended it. */
async function firstOfWatch(stream: AsyncIterable<unknown>): Promise<ServiceError | 'message'> {
  try {
    for await (const _ of stream) return 'message';
  } catch (err) {
    return err as ServiceError;
  }
  return 'message';
}

/** The status that ends a watch, reading whatever it sends first. */
async function endOfWatch(stream: AsyncIterable<unknown>): Promise<ServiceError | undefined> {
  try {
    for await (const _ of stream) continue;
  } catch (err) {
    return err as ServiceError;
  }
  return undefined;
}

/**
 * The attacks issue 12 lists, replayed against real processes (a scheduler with
 * GPUFLEET_ADMIN_TOKEN on a real nats-server, one simulated agent) through the gRPC API and the
 * CLI: each one must be refused with the status and sentence a user can act on.
 */
describe('access control on every API (real scheduler, real NATS)', () => {
  let nats: RunningServer;
  let stack: ServiceStack;
  let address: string;
  const clients: Client[] = [];
  let home: string;
  let sshKey: string;
  const token: Record<string, string> = {};

  const client = <C extends Client>(Ctor: new (a: string, c: ReturnType<typeof channelCredentials>, o: object) => C): C => {
    const c = new Ctor(address, channelCredentials(), clientOptions());
    clients.push(c);
    return c;
  };
  const cli = (args: string[], as?: string) => gpufleet([...args, '--scheduler', address], { GPUFLEET_HOME: home, GPUFLEET_ADMIN_TOKEN: '', GPUFLEET_TOKEN: as ?? '' });

  const instance = (namespace: string, name: string): GPUInstanceSpec =>
    GPUInstanceSpec.fromPartial({ name, namespace, instanceType: 'h100-80gb-hbm3-x86-64.1x', command: 'id > /tmp/pwned', sshPublicKeys: [readFileSync(sshKey, 'utf8').trim()] });
  const workload = (namespace: string, name: string, labels: Record<string, string> = {}) => WorkloadSpec.fromPartial({ name, namespace, localQueue: 'default', labels });

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'gpufleet-security-'));
    sshKey = join(home, 'key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', sshKey]);
    sshKey += '.pub';
    nats = await startNats();
    stack = new ServiceStack(nats.url);
    address = (await stack.scheduler({ GPUFLEET_ADMIN_TOKEN: ADMIN })).address;
    await stack.agent('h100-0', { GPUFLEET_ADMIN_TOKEN: ADMIN });
    token.admin = ADMIN;
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    await stack?.stop();
    await nats?.dispose();
  });

  it('refuses unauthenticated submit, deploy, instance, delete and watch calls with UNAUTHENTICATED', async () => {
    const scheduling = client(SchedulingServiceClient);
    const deployments = client(DeploymentServiceClient);
    const instances = client(InstanceServiceClient);
    const attempts: Array<Promise<unknown>> = [
      callUnary(scheduling, scheduling.submitWorkload, { spec: workload('default', 'w') }),
      callUnary(scheduling, scheduling.deleteWorkload, { namespace: 'default', name: 'w' }),
      callUnary(deployments, deployments.createDeployment, { spec: undefined }),
      callUnary(instances, instances.createInstance, { spec: instance('default', 'pwn') }),
      callUnary(instances, instances.deleteInstance, { namespace: 'default', name: 'pwn' }),
    ];
    for (const attempt of attempts) {
      const err = await refusal(attempt);
      expect(err.code).toBe(status.UNAUTHENTICATED);
      expect(err.details).toContain('authorization: Bearer <token>');
    }
    const watch = await firstOfWatch(iterateStream(scheduling.watchWorkloads({ namespace: '' } as never)));
    expect(watch).not.toBe('message');
    expect((watch as ServiceError).code).toBe(status.UNAUTHENTICATED);
    const wrong = await refusal(callUnary(instances, instances.listInstances, { namespace: 'default', pageSize: 0, pageToken: '' }, { metadata: bearer('guess') }));
    expect(wrong.details).toContain('neither an access token (gfat_…) nor the admin token');
  });

  it('lets the admin create users, roles and tokens with the CLI; tokens are stored only hashed', async () => {
    const admin = (args: string[]) => gpufleet([...args, '--scheduler', address], { GPUFLEET_HOME: home, GPUFLEET_ADMIN_TOKEN: ADMIN, GPUFLEET_TOKEN: '' });
    for (const [name, role, ns] of [
      ['alice', 'edit', 'team-a'],
      ['bob', 'view', 'team-a'],
    ]) {
      expect((await admin(['users', 'create', name])).code).toBe(0);
      const bound = await admin(['users', 'bind', name, '--role', role, '--namespace', ns]);
      expect(bound.stdout).toContain(`${name} has ${role} in ${ns}`);
      const created = await admin(['users', 'token', 'create', name, '--expires', '1d']);
      expect(created.code).toBe(0);
      token[name] = created.stdout.split('\n').find((l) => l.startsWith('gfat_'))!;
      expect(token[name]).toMatch(/^gfat_[a-z2-7]{12}_[A-Za-z0-9_-]{43}$/);
    }
    const listed = await admin(['users', 'list']);
    expect(listed.stdout).toMatch(/alice\s+User\s+edit in team-a/);
    expect(listed.stdout).toMatch(/bob\s+User\s+view in team-a/);

    const nc = await connectNats({ servers: [nats.url], name: 'security-e2e' });
    try {
      const tokens = await KvStore.open(nc.jetstream(), Buckets.accessTokens('dev'), AccessTokenRecord);
      const stored = await tokens.list();
      expect(stored).toHaveLength(2);
      const raw = JSON.stringify(stored);
      for (const t of [token.alice, token.bob]) expect(raw).not.toContain(t.slice(18));
      expect(stored.every((s) => s.value.secretHash.startsWith('hmac-sha256$'))).toBe(true);
    } finally {
      await nc.close();
    }

    // A plain user cannot manage users.
    const denied = await cli(['users', 'create', 'mallory'], token.alice);
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toContain('CreateUser needs the admin role');
  });

  it('an edit user of team-a works in team-a only; a view user reads but cannot write', async () => {
    const instances = client(InstanceServiceClient);
    const created = await callUnary(instances, instances.createInstance, { spec: instance('team-a', 'dev') }, { metadata: bearer(token.alice) });
    expect(created.instance?.spec?.name).toBe('dev');

    const otherNs = await refusal(callUnary(instances, instances.createInstance, { spec: instance('team-b', 'dev') }, { metadata: bearer(token.alice) }));
    expect(otherNs.code).toBe(status.PERMISSION_DENIED);
    expect(otherNs.details).toBe(
      'PERMISSION_DENIED: CreateInstance needs edit in namespace team-b (or admin); alice has edit in team-a; grant it with `gpufleet users bind alice --role edit --namespace team-b`',
    );
    const everywhere = await refusal(callUnary(instances, instances.listInstances, { namespace: '', pageSize: 0, pageToken: '' }, { metadata: bearer(token.alice) }));
    expect(everywhere.details).toContain('ListInstances across every namespace needs view in every namespace');

    const seen = await callUnary(instances, instances.getInstance, { namespace: 'team-a', name: 'dev' }, { metadata: bearer(token.bob) });
    expect(seen.instance?.spec?.name).toBe('dev');
    const write = await refusal(callUnary(instances, instances.deleteInstance, { namespace: 'team-a', name: 'dev' }, { metadata: bearer(token.bob) }));
    expect(write.code).toBe(status.PERMISSION_DENIED);
    expect(write.details).toContain('DeleteInstance needs edit in namespace team-a (or admin); bob has view in team-a');

    const deployments = client(DeploymentServiceClient);
    const watch = await firstOfWatch(iterateStream(deployments.watchDeployments({ namespace: 'team-b' } as never, bearer(token.bob))));
    expect((watch as ServiceError).code).toBe(status.PERMISSION_DENIED);

    // Capacity is readable by anyone with a role; ClusterQueues are written by admins only.
    const capacity = client(CapacityServiceClient);
    const nodes = await callUnary(capacity, capacity.listNodes, { pool: '', labelSelector: {}, pageSize: 0, pageToken: '' }, { metadata: bearer(token.bob) });
    expect(nodes.nodes.map((n) => n.name)).toContain('h100-0');
    const queues = client(QueueServiceClient);
    const cq = await refusal(callUnary(queues, queues.deleteClusterQueue, { name: 'anything' }, { metadata: bearer(token.alice) }));
    expect(cq.details).toContain('DeleteClusterQueue needs the admin role');
  });

  it('ignores a forged replica label: a caller cannot pass its workload off as a deployment replica', async () => {
    const scheduling = client(SchedulingServiceClient);
    const forged = await refusal(
      callUnary(
        scheduling,
        scheduling.submitWorkload,
        { spec: workload('team-a', 'fake-replica', { 'gpufleet.io/deployment': 'team-a.llama' }) },
        { metadata: bearer(token.alice) },
      ),
    );
    expect(forged.code).toBe(status.INVALID_ARGUMENT);
    expect(forged.details).toContain('gpufleet.io/');
  });

  it('refuses a free pod template on SubmitWorkload: only the deployment and instance controllers write what pods run', async () => {
    const scheduling = client(SchedulingServiceClient);
    const spec = WorkloadSpec.fromPartial({ ...workload('team-a', 'raw'), template: { instance: { instance: 'raw', sshPublicKeys: [], env: {}, command: 'id > /tmp/pwned' } } });
    const refused = await refusal(callUnary(scheduling, scheduling.submitWorkload, { spec }, { metadata: bearer(token.alice) }));
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toContain('spec.template: expected no template');
  });

  it('auth login keeps a token for later commands; whoami names the principal; a revoked token is refused at once', async () => {
    const login = await gpufleet(['auth', 'login', '--token', token.alice, '--scheduler', address], { GPUFLEET_HOME: home, GPUFLEET_ADMIN_TOKEN: '', GPUFLEET_TOKEN: '' });
    expect(login.stdout).toContain('logged in as alice (edit in team-a)');
    const me = await gpufleet(['auth', 'whoami', '--scheduler', address], { GPUFLEET_HOME: home, GPUFLEET_ADMIN_TOKEN: '', GPUFLEET_TOKEN: '' });
    expect(me.stdout).toMatch(/^alice \(User, token [a-z2-7]{12}\): edit in team-a/);

    const access = client(AccessServiceClient);
    const id = token.alice.slice(5, 17);
    await callUnary(access, access.revokeToken, { id }, { metadata: bearer(ADMIN) });
    const after = await refusal(callUnary(access, access.whoAmI, {}, { metadata: bearer(token.alice) }));
    expect(after.code).toBe(status.UNAUTHENTICATED);
    expect(after.details).toContain(`access token ${id} has been revoked`);
    const bad = await gpufleet(['auth', 'login', '--token', token.alice, '--scheduler', address], { GPUFLEET_HOME: join(home, 'other'), GPUFLEET_ADMIN_TOKEN: '', GPUFLEET_TOKEN: '' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('has been revoked');

    // A watch bob opened while he could, ended when he no longer can.
    const deployments = client(DeploymentServiceClient);
    const watch = deployments.watchDeployments({ namespace: 'team-a' } as never, bearer(token.bob));
    const ended = endOfWatch(iterateStream(watch));
    await new Promise((r) => setTimeout(r, 300));
    const deleted = await callUnary(access, access.deleteUser, { name: 'bob' }, { metadata: bearer(ADMIN) });
    const end = await ended;
    expect(end?.code).toBe(status.UNAUTHENTICATED);
    // DeleteUser removes the tokens first: the token is gone.
    expect(end?.details).toContain('no such token');
    expect(deleted).toEqual({ tokensDeleted: 1, bindingsDeleted: 1 });
    const gone = await refusal(callUnary(access, access.whoAmI, {}, { metadata: bearer(token.bob) }));
    expect(gone.code).toBe(status.UNAUTHENTICATED);
  });
});

/** What the scheduler would write for a deployment whose one replica is Ready at `endpoint`. */
function servingDeployment(name: string, model: string, endpoint: string): ModelDeployment {
  return ModelDeployment.fromPartial({
    spec: { name, namespace: 'default', model, servedModelName: model, roles: [{ role: 'server', replicas: 1, size: 1 }] },
    status: {
      readyReplicas: 1,
      desiredReplicas: 1,
      endpoints: [endpoint],
      replicas: [{ role: 'server', ordinal: 0, workload: `${name}-0`, state: 'Ready', node: 'node-0', endpoint, updated: true }],
    },
    generation: 1,
    uid: name,
  });
}

async function chatOf(base: string, model: string, stream = false): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, text: await res.text() };
}

/**
 * A real inference-router process between clients and engines it must not trust: a tenant's
 * engine that streams one endless SSE event, and a client that sends its body a byte at a time.
 * The deployments are written to the bucket as the scheduler would write them.
 */
describe('the router against hostile peers (real router process)', () => {
  let nats: RunningServer;
  let redis: RunningServer;
  let stack: ServiceStack;
  let hostile: HostileEngine;
  let router: { base: string; ops: string };

  beforeAll(async () => {
    [nats, redis] = await Promise.all([startNats(), startRedis()]);
    stack = new ServiceStack(nats.url, 'sec');
    hostile = await startHostileEngine('hostile-model');
    const good = await stack.engineSim('good-model');
    const nc = await connectNats({ servers: [nats.url], name: 'security-e2e-scheduler' });
    try {
      const deployments = await KvStore.open(nc.jetstream(), Buckets.deployments('sec'), ModelDeployment);
      await deployments.put('default.hostile', servingDeployment('hostile', 'hostile-model', hostile.endpoint));
      await deployments.put('default.good', servingDeployment('good', 'good-model', good.endpoint));
    } finally {
      await nc.close();
    }
    router = await stack.router(redis.url, { MAX_SSE_EVENT_KIB: '256', BODY_TIMEOUT_S: '1', HEADERS_TIMEOUT_S: '1', AUTH_REQUIRED: 'false' });
  }, 120_000);

  afterAll(async () => {
    await hostile?.close();
    await stack?.stop();
    await Promise.all([nats?.dispose(), redis?.dispose()]);
  });

  it('cuts an endless SSE event at MAX_SSE_EVENT_KIB while other requests keep being served', async () => {
    const cut = chatOf(router.base, 'hostile-model', true);
    for (let i = 0; i < 3; i++) expect((await chatOf(router.base, 'good-model')).status).toBe(200);
    const res = await cut;
    expect(res.text).toContain('more than 256 KiB (MAX_SSE_EVENT_KIB); the stream was cut');
    expect(res.text.length).toBeLessThan(300 * 1024);
    const metrics = await (await fetch(`${router.ops}/metrics`)).text();
    expect(metrics).toMatch(/gpufleet_router_limit_refusals_total\{limit="max_sse_event"[^}]*\} 1/);
  });

  it('drops a client that sends its body a byte at a time at BODY_TIMEOUT_S with 408', async () => {
    const { answer, elapsedMs } = await sendBodySlowly(router.base);
  expect(elapsedMs).toBeLessThan(5_000);
  expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect((await chatOf(router.base, 'good-model')).status).toBe(200);
  });
});

const DENIED = /permissions violation/i;

/**
 * `gpufleet up` with two nodes per process: its NATS server admits only the stack's identities,
 * and the identity of one agent process (nodes h100-0 and h100-1) may write those nodes'
 * records but not another node's, nor an API key (docs/security.md).
 */
describe('NATS identities of `gpufleet up`', () => {
  const home = mkdtempSync(join(tmpdir(), 'gpufleet-e2e-nats-'));
  const at = ['--home', home];
  const up = new UpProcess([...at, '--fleet', DEV_FLEET, '--nodes-per-process', '2', '--nats-port', '0', '--redis-port', '0', '--router-port', '0', '--scheduler-port', '0', '--scheduler-http-port', '0']);
  let natsUrl = '';
  let agent: NatsConnection | undefined;

  beforeAll(async () => {
    await up.waitUp();
    natsUrl = (JSON.parse(readFileSync(join(home, 'context.json'), 'utf8')) as { natsUrl: string }).natsUrl;
  });

  afterAll(async () => {
    await agent?.close();
    await up.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it('serves the whole fleet with one identity per process, and refuses a client without one', async () => {
    const nodes = await gpufleet(['get', 'nodes', '-o', 'json', ...at]);
    expect(nodes.code).toBe(0);
    expect((JSON.parse(nodes.stdout) as { items: unknown[] }).items).toHaveLength(5);
    await expect(connect({ servers: [natsUrl], reconnect: false })).rejects.toThrow(/authorization violation/i);
  });

  it("lets an agent's identity write its own nodes' records only, and no API key", async () => {
    agent = await connectNats({ servers: [natsUrl], name: 'e2e-agent', nkeySeedFile: join(home, 'nats-auth', 'agent-h100-0+1.nk') });
    const js = agent.jetstream();
    const record = (name: string) => JSONCodec().encode({ nodeName: name, cluster: 'dev' });
    const nodes = Buckets.nodes('dev');
    const own = await agent.jetstream().views.kv(nodes, { bindOnly: true });
    const current = await own.get('h100-1');
    await expect(js.publish(`$KV.${nodes}.h100-1`, current!.value)).resolves.toBeDefined();
    await expect(js.publish(`$KV.${nodes}.l40s-0`, record('l40s-0'))).rejects.toThrow(DENIED);
    await expect(js.publish(`$KV.${Buckets.apiKeys('dev')}.forged`, JSONCodec().encode({ id: 'forged' }))).rejects.toThrow(DENIED);
    await expect((await agent.jetstreamManager()).streams.delete(`KV_${nodes}`)).rejects.toThrow(DENIED);
  });

  it("does not deliver an agent's heartbeat that names another node: a dead node cannot be kept Ready", async () => {
    const scheduler = await connectNats({ servers: [natsUrl], name: 'e2e-observer', nkeySeedFile: join(home, 'nats-auth', 'scheduler.nk') });
    try {
      // The real agents keep beating meanwhile; the forged beat is told apart by its generation.
      const FORGED = 987_654_321;
      const seen: Array<{ subject: string; generation?: number }> = [];
      const codec = JSONCodec<{ generation?: number }>();
      const sub = scheduler.subscribe(subjectOf(Events.heartbeat, 'dev'), { callback: (_err, msg) => seen.push({ subject: msg.subject, generation: codec.decode(msg.data).generation }) });
      await scheduler.flush();
      agent ??= await connectNats({ servers: [natsUrl], name: 'e2e-agent', nkeySeedFile: join(home, 'nats-auth', 'agent-h100-0+1.nk') });
      agent.publish(scopedSubjectOf(Events.heartbeat, 'dev', 'l40s-0'), JSONCodec().encode({ nodeName: 'l40s-0', cluster: 'dev', generation: FORGED }));
      // Its own node's beat, published after the forged one, arrives: the connection was not the problem.
      agent.publish(scopedSubjectOf(Events.heartbeat, 'dev', 'h100-0'), JSONCodec().encode({ nodeName: 'h100-0', cluster: 'dev', generation: FORGED }));
      await agent.flush();
      await waitFor('its own beat', () => seen.some((m) => m.generation === FORGED) || undefined);
      await scheduler.flush();
      sub.unsubscribe();
      expect(seen.filter((m) => m.generation === FORGED).map((m) => m.subject)).toEqual([scopedSubjectOf(Events.heartbeat, 'dev', 'h100-0')]);
    } finally {
      await scheduler.close();
    }
  });
});

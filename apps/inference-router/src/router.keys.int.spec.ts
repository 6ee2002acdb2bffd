// API keys and rate limits across two router replicas sharing NATS and Redis: KeyService over
// gRPC, 401/403, revocation everywhere within a second, limits shared through Redis, 429, usage
// read back with GetUsage.
import { Metadata, status } from '@grpc/grpc-js';
import Redis from 'ioredis';
import { ACCESS_TOKENS, bindingKey, hashSecret } from '@gpufleet/access-core';
import { AccessTokenRecord, Buckets, PrincipalKind, RedisKeys, Role, RoleBinding, User } from '@gpufleet/contracts';
import { KvStore } from '@gpufleet/messaging';
import { callUnary } from '@gpufleet/grpc-kit';
import { grpcError, waitFor } from '@gpufleet/testing';
import { bearer, chat, post, RouterHarness, type EngineSim, type ErrorBody, type TestRouter } from './__fixtures__/router-harness';

const MODEL = 'test/model';
const OTHER = 'other/model';
const ADMIN = 'admin-secret-token';
let h: RouterHarness;
let sim: EngineSim;
let a: TestRouter;
let b: TestRouter;

beforeAll(async () => {
  h = await RouterHarness.start();
  sim = await h.engine(['--served-model-name', MODEL, OTHER]);
  await h.putDeployment('chat', MODEL, [sim.endpoint]);
  await h.putDeployment('other', OTHER, [sim.endpoint]);
  [a, b] = await Promise.all([h.router({ GPUFLEET_ADMIN_TOKEN: ADMIN }), h.router({ GPUFLEET_ADMIN_TOKEN: ADMIN })]);
  await Promise.all([h.untilReplicas(a, OTHER, 1), h.untilReplicas(b, OTHER, 1)]);
});

afterAll(() => h?.stop());

const admin = (): Metadata => {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${ADMIN}`);
  return metadata;
};

/** Waits until router `r` knows key `id` (the watch delivers it in milliseconds). */
const known = (r: TestRouter, id: string) => waitFor(`key ${id} on a router`, () => (r.runtime.keys.get(id) ? true : undefined), { timeoutMs: 2_000, intervalMs: 5 });

describe('KeyService', () => {
  it('needs the admin token', async () => {
    const err = await grpcError(h.createKey(a, { allModels: true }));
    expect(err.code).toBe(status.UNAUTHENTICATED);
    expect(err.details).toContain('GPUFLEET_ADMIN_TOKEN');
  });

  it('takes access tokens of principals with the admin role and refuses the others with the role they miss', async () => {
    // What the scheduler's AccessService writes, written here directly: the router only reads the buckets.
    const js = h.nc.jetstream();
    const users = await KvStore.open(js, Buckets.accessUsers(h.cluster), User);
    const tokens = await KvStore.open(js, Buckets.accessTokens(h.cluster), AccessTokenRecord);
    const bindings = await KvStore.open(js, Buckets.accessBindings(h.cluster), RoleBinding);
    const tokenOf = async (name: string, role: Role, namespace: string): Promise<string> => {
      await users.put(name, { name, kind: PrincipalKind.PRINCIPAL_KIND_SERVICE_ACCOUNT, description: '', createdAt: new Date() });
      const binding = { principal: name, role, namespace, createdAt: new Date() };
      await bindings.put(bindingKey(binding), binding);
      const t = ACCESS_TOKENS.generate();
      await tokens.put(t.id, { token: { id: t.id, principal: name, description: '', createdAt: new Date(), expiresAt: undefined, revoked: false, revokedAt: undefined }, secretHash: hashSecret(t.secret) });
      return t.key;
    };
    const ops = await tokenOf('ops', Role.ROLE_ADMIN, '');
    const team = await tokenOf('team-a-ci', Role.ROLE_EDIT, 'team-a');
    await waitFor('access tokens on router a', () => (a.runtime.access.token(ACCESS_TOKENS.parse(team).id) ? true : undefined), { timeoutMs: 2_000, intervalMs: 5 });
    expect((await h.createKey(a, { allModels: true }, ops)).fullKey).toMatch(/^gpufleet_/);
    const denied = await grpcError(h.createKey(a, { allModels: true }, team));
    expect(denied.code).toBe(status.PERMISSION_DENIED);
    expect(denied.details).toBe('PERMISSION_DENIED: CreateKey needs the admin role (it acts on cluster-scoped objects); team-a-ci has edit in team-a');
  });

  it('creates a key shown once, stores only its hash, gets, lists and revokes it', async () => {
    const created = await h.createKey(a, { name: 'ci', models: [MODEL], limits: { requestsPerMinute: 100, tokensPerMinute: 0 }, labels: { team: 'a' } }, ADMIN);
    const id = created.key?.id ?? '';
    expect(created.fullKey).toMatch(new RegExp(`^gpufleet_${id}_[A-Za-z0-9_-]{43}$`));
    const stored = await h.apiKeys.get(id);
    expect(stored?.value.secretHash).toMatch(/^hmac-sha256\$/);
    expect(JSON.stringify(stored?.value)).not.toContain(created.fullKey.slice(-43));

    const got = await callUnary(b.grpc, b.grpc.getKey, { id }, { metadata: admin() });
    expect(got.key).toMatchObject({ id, name: 'ci', models: [MODEL], allModels: false, revoked: false, labels: { team: 'a' } });
    expect(got.key).not.toHaveProperty('secretHash');
    const listed = await callUnary(b.grpc, b.grpc.listKeys, { includeRevoked: false }, { metadata: admin() });
    expect(listed.keys.map((k) => k.id)).toContain(id);

    const revoked = await callUnary(b.grpc, b.grpc.revokeKey, { id }, { metadata: admin() });
    expect(revoked.key?.revoked).toBe(true);
    expect(revoked.key?.revokedAt).toBeInstanceOf(Date);
    const after = await callUnary(a.grpc, a.grpc.listKeys, { includeRevoked: false }, { metadata: admin() });
    expect(after.keys.map((k) => k.id)).not.toContain(id);
  });

  it('rejects bad requests naming the field, and unknown ids', async () => {
    const bad = await grpcError(h.createKey(a, { models: [] }, ADMIN));
    expect(bad.code).toBe(status.INVALID_ARGUMENT);
    expect(bad.details).toContain('models:');
    const missing = await grpcError(callUnary(a.grpc, a.grpc.getKey, { id: 'aaaaaaaaaaaa' }, { metadata: admin() }));
    expect(missing.code).toBe(status.NOT_FOUND);
    const malformed = await grpcError(callUnary(a.grpc, a.grpc.revokeKey, { id: 'nope' }, { metadata: admin() }));
    expect(malformed.code).toBe(status.INVALID_ARGUMENT);
  });
});

describe('authentication and scopes', () => {
  it('401: a missing, malformed or wrong key', async () => {
    const missing = await post(a.base, '/v1/chat/completions', chat(MODEL, 'x'));
    expect(missing.status).toBe(401);
    expect((missing.json as ErrorBody).error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    expect((await post(a.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer('sk-not-ours'))).status).toBe(401);
    const created = await h.createKey(a, { allModels: true }, ADMIN);
    const wrongSecret = `${created.fullKey.slice(0, -4)}AAAA`;
    const wrong = await post(a.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(wrongSecret));
    expect(wrong.status).toBe(401);
    expect((wrong.json as ErrorBody).error.message).not.toContain(wrongSecret);
    expect((await fetch(`${a.base}/v1/models`)).status).toBe(401);
  });

  it('403: a model outside the key’s scope; /v1/models lists only the key’s models', async () => {
    const created = await h.createKey(a, { models: [MODEL] }, ADMIN);
    await known(b, created.key?.id ?? '');
    expect((await post(b.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(created.fullKey))).status).toBe(200);
    const forbidden = await post(b.base, '/v1/chat/completions', chat(OTHER, 'x'), bearer(created.fullKey));
    expect(forbidden.status).toBe(403);
    expect((forbidden.json as ErrorBody).error).toMatchObject({ type: 'permission_error', code: 'model_not_allowed', param: 'model' });
    // Out of scope even when the model does not exist: a key learns nothing about other models.
    expect((await post(b.base, '/v1/chat/completions', chat('secret/model', 'x'), bearer(created.fullKey))).status).toBe(403);
    const models = (await (await fetch(`${b.base}/v1/models`, { headers: bearer(created.fullKey) })).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual([MODEL]);
  });

  it('401: an expired key', async () => {
    const created = await h.createKey(a, { allModels: true, expiresInSeconds: 1 }, ADMIN);
    expect((await post(a.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(created.fullKey))).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_100));
    const expired = await post(a.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(created.fullKey));
    expect(expired.status).toBe(401);
    expect((expired.json as ErrorBody).error.message).toContain('expired');
  });

  it('revocation on one router replica applies on the other within a second', async () => {
    const created = await h.createKey(a, { allModels: true }, ADMIN);
    const id = created.key?.id ?? '';
    await known(b, id);
    expect((await post(b.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(created.fullKey))).status).toBe(200);
    const revokedAt = Date.now();
    await callUnary(a.grpc, a.grpc.revokeKey, { id }, { metadata: admin() });
    // The revoking replica refuses at once.
    expect((await post(a.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(created.fullKey))).status).toBe(401);
    await waitFor('router b to refuse the revoked key', async () => ((await post(b.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(created.fullKey))).status === 401 ? true : undefined), {
      timeoutMs: 1_000,
      intervalMs: 10,
    });
    expect(Date.now() - revokedAt).toBeLessThan(1_000);
  });
});

describe('rate limits shared by router replicas', () => {
  it('429 with Retry-After once requests per minute are used up, across both replicas', async () => {
    const created = await h.createKey(a, { allModels: true, limits: { requestsPerMinute: 4, tokensPerMinute: 0 } }, ADMIN);
    await known(b, created.key?.id ?? '');
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await post(i % 2 === 0 ? a.base : b.base, '/v1/chat/completions', chat(MODEL, `r${i}`), bearer(created.fullKey))).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    const limited = await post(b.base, '/v1/chat/completions', chat(MODEL, 'over'), bearer(created.fullKey));
    expect(limited.status).toBe(429);
    expect((limited.json as ErrorBody).error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(15);
    expect(limited.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    // Limits are per key and model: the same key still has its full allowance on another model.
    expect((await post(a.base, '/v1/chat/completions', chat(OTHER, 'x'), bearer(created.fullKey))).status).toBe(200);
  });

  it('counts tokens per minute from the engine’s usage, and refuses a request that can never fit', async () => {
    const created = await h.createKey(a, { allModels: true, limits: { requestsPerMinute: 0, tokensPerMinute: 60 } }, ADMIN);
    await known(b, created.key?.id ?? '');
    const tooBig = await post(a.base, '/v1/chat/completions', chat(MODEL, 'x', { max_tokens: 100 }), bearer(created.fullKey));
    expect(tooBig.status).toBe(429);
    expect((tooBig.json as ErrorBody).error.code).toBe('tokens_exceed_limit');
    expect(tooBig.headers.get('retry-after')).toBeNull();
    // ~10 prompt tokens + 20 reserved for the completion each: the second request on the other
    // replica still fits, the third does not.
    const first = await post(a.base, '/v1/chat/completions', chat(MODEL, 'tokens one', { max_tokens: 20, ignore_eos: true }), bearer(created.fullKey));
    expect(first.status).toBe(200);
    const second = await post(b.base, '/v1/chat/completions', chat(MODEL, 'tokens two', { max_tokens: 20, ignore_eos: true }), bearer(created.fullKey));
    expect(second.status).toBe(200);
    const third = await post(a.base, '/v1/chat/completions', chat(MODEL, 'tokens three', { max_tokens: 20, ignore_eos: true }), bearer(created.fullKey));
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).not.toBeNull();
    expect((third.json as ErrorBody).error.message).toContain('60 tokens per minute');
  });

  it('meters usage per key', async () => {
    const created = await h.createKey(a, { allModels: true }, ADMIN);
    const id = created.key?.id ?? '';
    await post(a.base, '/v1/chat/completions', chat(MODEL, 'metered', { max_tokens: 3, ignore_eos: true }), bearer(created.fullKey));
    await waitFor('the key’s usage in Prometheus', async () => {
      const text = await (await fetch(`http://127.0.0.1:${a.opsPort}/metrics`)).text();
      return text.includes(`gpufleet_router_tokens_total{key="${id}",model="${MODEL}",deployment="default.chat",kind="completion",service="inference-router"} 3`) ? true : undefined;
    });
  });
});

describe('GetUsage', () => {
  const DAY_MS = 86_400_000;
  const day = (daysAgo: number) => new Date(Date.now() - daysAgo * DAY_MS).toISOString().slice(0, 10);
  const usage = (request: { keyId?: string; days?: number; model?: string }, metadata = admin()) =>
    callUnary(a.grpc, a.grpc.getUsage, { keyId: '', days: 0, model: '', ...request }, { metadata });

  it('reports what both router replicas metered, per day, key, deployment and model, over the days asked for', async () => {
    const created = await h.createKey(a, { allModels: true }, ADMIN);
    const id = created.key?.id ?? '';
    await known(b, id);
    const once = { max_tokens: 3, ignore_eos: true };
    expect((await post(a.base, '/v1/chat/completions', chat(MODEL, 'usage one', once), bearer(created.fullKey))).status).toBe(200);
    expect((await post(b.base, '/v1/chat/completions', chat(MODEL, 'usage two', { ...once, stream: true }), bearer(created.fullKey))).status).toBe(200);
    expect((await post(b.base, '/v1/chat/completions', chat(OTHER, 'usage three', once), bearer(created.fullKey))).status).toBe(200);

    // Earlier days, as the meters of earlier days left them; one of another key, one past the range.
    const redis = new Redis(h.redis.url, { disableClientInfo: true });
    const dayKey = (daysAgo: number, keyId: string) => RedisKeys.usageDay(h.cluster, day(daysAgo), keyId);
    try {
      await redis.hset(dayKey(2, id), { [`requests|default.chat|${MODEL}`]: 5, [`completion_tokens|default.chat|${MODEL}`]: 50, [`estimated_requests|default.chat|${MODEL}`]: 1 });
      await redis.hset(dayKey(2, 'zzzzzzzzzzzz'), { [`requests|default.other|${OTHER}`]: 7 });
      await redis.hset(dayKey(3, id), { [`requests|default.chat|${MODEL}`]: 9 });
    } finally {
      redis.disconnect();
    }

    const today = await waitFor('today’s usage of both replicas in Redis', async () => {
      const { rows } = await usage({ keyId: id, days: 1 });
      return rows.length === 2 && rows.every((r) => r.requests === (r.model === MODEL ? 2 : 1)) ? rows : undefined;
    });
    expect(today).toEqual([
      { day: day(0), keyId: id, deployment: 'default.chat', model: MODEL, requests: 2, promptTokens: expect.any(Number), cachedTokens: expect.any(Number), completionTokens: 6, estimatedRequests: 0 },
      { day: day(0), keyId: id, deployment: 'default.other', model: OTHER, requests: 1, promptTokens: expect.any(Number), cachedTokens: expect.any(Number), completionTokens: 3, estimatedRequests: 0 },
    ]);
    expect(today[0].promptTokens).toBeGreaterThan(0);

    const threeDays = (await usage({ keyId: id, days: 3 })).rows;
    expect(threeDays.map((r) => [r.day, r.model, r.requests])).toEqual([
      [day(2), MODEL, 5],
      [day(0), MODEL, 2],
      [day(0), OTHER, 1],
    ]);
    expect(threeDays[0]).toMatchObject({ completionTokens: 50, estimatedRequests: 1, promptTokens: 0 });
    expect((await usage({ keyId: id, days: 3, model: OTHER })).rows.map((r) => r.model)).toEqual([OTHER]);

    // Every key: found by SCAN, oldest day first, the day out of range left out.
    const all = (await usage({ days: 3 })).rows;
    expect(all.filter((r) => r.keyId === id).map((r) => r.requests)).toEqual([5, 2, 1]);
    expect(all).toContainEqual(expect.objectContaining({ day: day(2), keyId: 'zzzzzzzzzzzz', deployment: 'default.other', model: OTHER, requests: 7 }));
    expect(all.some((r) => r.day === day(3))).toBe(false);
    expect(all.map((r) => r.day)).toEqual([...all.map((r) => r.day)].sort());
    expect((await usage({ keyId: 'aaaaaaaaaaaa', days: 400 })).rows).toEqual([]);
  });

  it('needs the admin token and names a bad field', async () => {
    expect((await grpcError(usage({}, new Metadata()))).code).toBe(status.UNAUTHENTICATED);
    const tooMany = await grpcError(usage({ days: 401 }));
    expect(tooMany.code).toBe(status.INVALID_ARGUMENT);
    expect(tooMany.details).toContain('days: expected 1 to 400');
    const badKey = await grpcError(usage({ keyId: 'gpufleet_abc' }));
    expect(badKey.code).toBe(status.INVALID_ARGUMENT);
    expect(badKey.details).toContain('key_id:');
  });
});

describe('when Redis is down', () => {
  it('fail-open lets limited keys through, fail-closed answers 503, and usage metered meanwhile reaches Redis once it is back', async () => {
    const closed = await h.router({ GPUFLEET_ADMIN_TOKEN: ADMIN, RATE_LIMIT_FAIL_OPEN: 'false' });
    const created = await h.createKey(a, { allModels: true, limits: { requestsPerMinute: 1000, tokensPerMinute: 0 } }, ADMIN);
    const id = created.key?.id ?? '';
    await Promise.all([known(a, id), known(closed, id), h.untilReplicas(closed, MODEL, 1)]);
    expect((await post(closed.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(created.fullKey))).status).toBe(200);

    await h.redis.stop();
    const open = await post(a.base, '/v1/chat/completions', chat(MODEL, 'during the outage', { max_tokens: 2, ignore_eos: true }), bearer(created.fullKey));
    expect(open.status).toBe(200);
    const refused = await post(closed.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(created.fullKey));
    expect(refused.status).toBe(503);
    expect((refused.json as ErrorBody).error.message).toContain('Redis unavailable');
    const noUsage = await grpcError(callUnary(a.grpc, a.grpc.getUsage, { keyId: id, days: 1, model: '' }, { metadata: admin() }));
    expect(noUsage.code).toBe(status.UNAVAILABLE);
    expect(noUsage.details).toContain('usage counters could not be read from Redis');
    await waitFor('fail-closed router to report not ready', async () => ((await fetch(`http://127.0.0.1:${closed.opsPort}/readyz`)).status === 503 ? true : undefined));
    // Keys without limits never need Redis.
    const unlimited = await h.createKey(a, { allModels: true }, ADMIN);
    await known(closed, unlimited.key?.id ?? '');
    expect((await post(closed.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(unlimited.fullKey))).status).toBe(200);

    await h.redis.restart();
    await waitFor('fail-closed router to serve again', async () => ((await post(closed.base, '/v1/chat/completions', chat(MODEL, 'x'), bearer(created.fullKey))).status === 200 ? true : undefined), {
      timeoutMs: 10_000,
      intervalMs: 200,
    });
    const client = new Redis(h.redis.url, { disableClientInfo: true });
    try {
      await waitFor('usage metered during the outage to reach Redis', async () => {
        const totals = await client.hgetall(RedisKeys.usageTotal(h.cluster, id));
        return Number(totals[`completion_tokens|default.chat|${MODEL}`] ?? 0) >= 2 ? true : undefined;
      }, { timeoutMs: 10_000, intervalMs: 100 });
    } finally {
      client.disconnect();
    }
  });
});

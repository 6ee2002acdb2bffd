import { mkdtempSync, readFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { waitFor } from '@gpufleet/testing';
import { DEV_FLEET, REPO_ROOT } from './support/services';
import { UpProcess, gpufleet } from './support/cli';

/**
 * The inference router of `gpufleet up`: one deployment replica (engine-sim on the simulated dev
 * fleet) served through the router's OpenAI API, then keys and usage through the CLI. The stack
 * runs without --router-auth, so requests without a key are metered as "anonymous".
 */

const MODEL = 'llama-3.1-8b';
const home = mkdtempSync(join(tmpdir(), 'gpufleet-router-'));
const at = ['--home', home];

interface Context {
  router: string;
  routerGrpc: string;
  redisUrl: string;
}
interface ReplicaJson {
  workload: string;
  state: string;
}
interface UsageJson {
  day: string;
  keyId: string;
  deployment: string;
  model: string;
  requests: number;
  promptTokens: number;
  completionTokens: number;
}

async function chat(base: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 5, ignore_eos: true, ...body }),
  });
}

async function usage(args: string[]): Promise<UsageJson[]> {
  const res = await gpufleet(['usage', ...args, '-o', 'json', ...at]);
  if (res.code !== 0) throw new Error(res.stderr);
  return (JSON.parse(res.stdout) as { items: UsageJson[] }).items;
}

describe('the inference router of `gpufleet up`', () => {
  const up = new UpProcess([...at, '--fleet', DEV_FLEET, '--nats-port', '0', '--redis-port', '0', '--router-port', '0', '--scheduler-port', '0', '--scheduler-http-port', '0', '--heartbeat-interval', '1']);
  let base = '';
  let replica: ReplicaJson;

  afterAll(async () => {
    await up.stop();
  });

  it('starts Redis and the router, recorded in the context', async () => {
    await up.waitUp();
    expect(up.output).toMatch(/^ {2}redis-server +redis:\/\/127\.0\.0\.1:\d+ /m);
    expect(up.output).toMatch(/^ {2}router +http:\/\/127\.0\.0\.1:\d+\/v1 {2}\(OpenAI API; keys not required\) {2}grpc 127\.0\.0\.1:\d+ /m);
    const ctx = JSON.parse(readFileSync(join(home, 'context.json'), 'utf8')) as Context;
    expect(ctx.router).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(ctx.routerGrpc).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(ctx.redisUrl).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(up.output).toContain(`${ctx.router}/v1`);
    base = ctx.router;
  });

  it('serves a Ready deployment through the OpenAI API: models, chat, streamed chat, unknown model', async () => {
    expect((await gpufleet(['submit', '-f', join(REPO_ROOT, 'examples/workloads/queues.yaml'), ...at])).code).toBe(0);
    const deployed = await gpufleet(['deploy', '/models/llama-3.1-8b', '--name', 'llama', '-n', 'team-a', '--instance-type', 'h100-80gb-hbm3-x86-64.1x', '--wait', '--timeout', '60', ...at]);
    expect(deployed.stderr).toBe('');
    const got = await gpufleet(['get', 'deployments', 'llama', '-n', 'team-a', '-o', 'json', ...at]);
    replica = (JSON.parse(got.stdout) as { status: { replicas: ReplicaJson[] } }).status.replicas[0];
    expect(replica.state).toBe('Ready');

    // The router follows the deployments bucket: the replica is in its pool within moments.
    const models = await waitFor('the router to list the model', async () => {
      const body = (await (await fetch(`${base}/v1/models`)).json()) as { object: string; data: Array<{ id: string; owned_by: string }> };
      return body.data.some((m) => m.id === MODEL) ? body : undefined;
    }, { timeoutMs: 10_000, intervalMs: 100 });
    expect(models).toEqual({ object: 'list', data: [expect.objectContaining({ id: MODEL, object: 'model', owned_by: 'gpufleet' })] });

    // engine-sim names itself <namespace>-<workload>-<pod set>-<replica>-<pod> in x-gpufleet-replica.
    const replicaName = new RegExp(`^team-a-${replica.workload}-`);
    const plain = await chat(base, {});
    expect(plain.status).toBe(200);
    expect(plain.headers.get('x-gpufleet-replica')).toMatch(replicaName);
    expect(plain.headers.get('x-request-id')).toBeTruthy();
    const answer = (await plain.json()) as { object: string; model: string; usage: { completion_tokens: number } };
    expect(answer).toMatchObject({ object: 'chat.completion', model: MODEL, usage: { completion_tokens: 5 } });

    const streamed = await chat(base, { stream: true }, { 'x-request-id': 'e2e-stream-1' });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(streamed.headers.get('x-gpufleet-replica')).toMatch(replicaName);
    expect(streamed.headers.get('x-request-id')).toBe('e2e-stream-1');
    const events = (await streamed.text()).split('\n\n').filter((e) => e.startsWith('data: '));
    expect(events[events.length - 1]).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { object: string; usage?: unknown });
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    // The router asked the engine for usage, and took that chunk out again: the client did not ask.
    expect(chunks.some((c) => c.usage)).toBe(false);

    const unknown = await chat(base, { model: 'no-such-model' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      error: { message: expect.stringContaining(MODEL), type: 'not_found_error', param: 'model', code: 'model_not_found' },
    });
  });

  it('creates, lists and revokes a key, and reports usage per key with the CLI', async () => {
    const created = await gpufleet(['keys', 'create', '--name', 'e2e', '--models', MODEL, '--expires', '1d', '--rpm', '100', ...at]);
    expect(created.stderr).toBe('');
    const [summary, keyLine, warning] = created.stdout.trim().split('\n');
    const id = /^key\/([a-z0-9]{12}) created: "e2e", model\(s\) llama-3\.1-8b, expires \S+, limits 100 rpm per model$/.exec(summary)?.[1] ?? '';
    expect(id).not.toBe('');
    const fullKey = keyLine.trim();
    expect(fullKey).toMatch(new RegExp(`^gpufleet_${id}_[A-Za-z0-9_-]{43}$`));
    expect(warning).toMatch(/only time the full key is shown/);

    // Without --router-auth keys are optional, but one that is sent is checked and metered.
    const keyed = await chat(base, {}, { authorization: `Bearer ${fullKey}` });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get('x-ratelimit-remaining-requests')).toBe('99');

    const listed = await gpufleet(['keys', 'list', ...at]);
    expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+e2e\\s+${MODEL.replace(/\./g, '\\.')}\\s+100\\s+-\\s+\\S+Z\\s+Active\\s`, 'm'));

    // Usage reaches Redis within a flush (USAGE_FLUSH_S, 1 s): two requests without a key, one with it.
    const rows = await waitFor('the requests in the usage counters', async () => {
      const all = await usage([]);
      const anonymous = all.find((r) => r.keyId === 'anonymous');
      const mine = all.find((r) => r.keyId === id);
      return anonymous?.requests === 2 && mine?.requests === 1 ? all : undefined;
    }, { timeoutMs: 10_000, intervalMs: 250 });
    const today = new Date().toISOString().slice(0, 10);
    const anonymousRow = { day: today, keyId: 'anonymous', deployment: 'team-a.llama', model: MODEL, requests: 2, promptTokens: expect.any(Number), cachedTokens: expect.any(Number), completionTokens: 10, estimatedRequests: 0 };
    const keyRow = { day: today, keyId: id, deployment: 'team-a.llama', model: MODEL, requests: 1, promptTokens: expect.any(Number), cachedTokens: expect.any(Number), completionTokens: 5, estimatedRequests: 0 };
    // Rows come sorted by day, then key id; the generated id may sort before or after "anonymous".
    expect(rows).toEqual(id.localeCompare('anonymous') < 0 ? [keyRow, anonymousRow] : [anonymousRow, keyRow]);
    expect(await usage(['--key', id, '--days', '7'])).toEqual([rows.find((r) => r.keyId === id)]);

    const table = await gpufleet(['usage', '--key', 'anonymous', ...at]);
    expect(table.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^DAY\s+KEY\s+DEPLOYMENT\s+MODEL\s+REQUESTS\s+PROMPT\s+CACHED\s+COMPLETION$/),
      expect.stringMatching(new RegExp(`^${today}\\s+anonymous\\s+team-a\\.llama\\s+llama-3\\.1-8b\\s+2\\s+\\d+\\s+\\d+\\s+10$`)),
    ]);

    const revoked = await gpufleet(['keys', 'revoke', id, ...at]);
    expect(revoked.stdout).toMatch(new RegExp(`^key/${id} revoked`));
    const refused = await chat(base, {}, { authorization: `Bearer ${fullKey}` });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('revoked');
    expect((await gpufleet(['keys', 'list', ...at])).stdout).not.toContain(id);
    expect((await gpufleet(['keys', 'list', '--all', ...at])).stdout).toMatch(new RegExp(`^${id}\\s.*\\sRevoked\\s`, 'm'));

    const tooMany = await gpufleet(['usage', '--days', '401', ...at]);
    expect(tooMany.code).toBe(1);
    expect(tooMany.stderr).toMatch(/^error: INVALID_ARGUMENT: --days: expected 1 to 400/);
  });
});

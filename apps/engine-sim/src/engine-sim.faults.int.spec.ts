// Queueing, fault injection, configuration errors and graceful shutdown of the real process.
import { parseSse } from '@gpufleet/openai-protocol';
import { waitFor } from '@gpufleet/testing';
import { EngineSimProcesses, metric, post, TEST_MODEL } from './__fixtures__/engine-sim.process';

const processes = new EngineSimProcesses();
afterAll(() => processes.stopAll());

const chat = (content: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: TEST_MODEL,
  messages: [{ role: 'user', content }],
  max_tokens: 5,
  ignore_eos: true,
  ...extra,
});

const exitCode = (proc: { exited: Promise<number | null> }, timeoutMs = 15_000): Promise<number | null | 'timeout'> =>
  Promise.race([proc.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs).unref())]);

it('queues beyond --max-num-seqs, visibly in vllm:num_requests_waiting', async () => {
  const sim = await processes.start(['--max-num-seqs', '1', '--itl-ms', '100', '--prefill-us-per-token', '0']);
  const requests = [0, 1, 2].map((i) => post(sim.base, '/v1/chat/completions', chat(`queued request ${i}`)));
  const seen = await waitFor(
    'two requests waiting behind one running',
    async () => {
      const waiting = await metric(sim.base, 'vllm:num_requests_waiting');
      const running = await metric(sim.base, 'vllm:num_requests_running');
      return waiting === 2 && running === 1 ? { waiting, running } : undefined;
    },
    { timeoutMs: 5_000, intervalMs: 20 },
  );
  expect(seen).toEqual({ waiting: 2, running: 1 });
  const answers = await Promise.all(requests);
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
  expect(await metric(sim.base, 'vllm:num_requests_waiting')).toBe(0);
  expect(await metric(sim.base, 'vllm:request_queue_time_seconds_sum')).toBeGreaterThan(0.5);
});

it('aborts a request whose client goes away, freeing its slot', async () => {
  const sim = await processes.start(['--max-num-seqs', '1', '--itl-ms', '50', '--prefill-us-per-token', '0']);
  const controller = new AbortController();
  const response = await fetch(`${sim.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chat('never mind', { max_tokens: 100, stream: true })),
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  await reader.read();
  expect(await metric(sim.base, 'vllm:num_requests_running')).toBe(1);
  controller.abort();
  await waitFor('the aborted request counted', async () => (await metric(sim.base, 'vllm:request_success_total', 'finished_reason="abort"')) === 1 || undefined, {
    timeoutMs: 3_000,
    intervalMs: 20,
  });
  expect(await metric(sim.base, 'vllm:num_requests_running')).toBe(0);
  expect((await post(sim.base, '/v1/chat/completions', chat('next'))).status).toBe(200);
});

it('exits (status 70) right after answering --crash-after requests', async () => {
  const sim = await processes.start(['--crash-after', '2', '--itl-ms', '0', '--prefill-us-per-token', '0']);
  expect((await post(sim.base, '/v1/chat/completions', chat('one'))).status).toBe(200);
  expect((await post(sim.base, '/v1/chat/completions', chat('two'))).status).toBe(200);
  expect(await exitCode(sim.proc)).toBe(70);
  expect(sim.log()).toContain('simulated crash after 2 requests');
  await expect(fetch(`${sim.base}/healthz`)).rejects.toThrow();
});

it('is alive but not ready during --slow-start-s, then ready', async () => {
  const sim = await processes.start(['--slow-start-s', '2'], {}, 'healthz');
  const readyz = await fetch(`${sim.base}/readyz`);
  expect(readyz.status).toBe(503);
  const body = (await readyz.json()) as { status: string; failed: string[] };
  expect(body.status).toBe('not ready');
  expect(body.failed[0]).toMatch(/^model: loading \(simulated slow start/);
  expect((await fetch(`${sim.base}/health`)).status).toBe(503);
  const early = await post(sim.base, '/v1/chat/completions', chat('too early'));
  expect(early.status).toBe(503);
  expect(early.headers.get('retry-after')).toMatch(/^\d+$/);
  await waitFor('ready after the slow start', async () => ((await fetch(`${sim.base}/readyz`)).status === 200) || undefined, { timeoutMs: 5_000, intervalMs: 100 });
  expect((await post(sim.base, '/v1/chat/completions', chat('now'))).status).toBe(200);
});

it('injects server errors at --error-rate and requires --api-key when set', async () => {
  const sim = await processes.start(['--error-rate', '1', '--api-key', 'sk-test']);
  const noKey = await post(sim.base, '/v1/chat/completions', chat('hi'));
  expect(noKey.status).toBe(401);
  const res = await post(sim.base, '/v1/chat/completions', chat('hi'), { authorization: 'Bearer sk-test' });
  expect(res.status).toBe(500);
  expect((res.json as { error: { message: string; type: string } }).error).toMatchObject({ type: 'InternalServerError' });
  expect((res.json as { error: { message: string } }).error.message).toMatch(/^Injected fault/);
  expect(await metric(sim.base, 'gpufleet_engine_sim_injected_errors_total')).toBe(1);
});

it('stops with 78 and names the flag and the variable of a bad value', async () => {
  const sim = await processes.start(['--max-num-seqs', '0'], { ITL_MS: 'fast' }, 'none');
  expect(await exitCode(sim.proc)).toBe(78);
  await waitFor('the error in the log', () => sim.log().includes('INVALID_CONFIG') || undefined, { timeoutMs: 2_000 });
  expect(sim.log()).toContain('--max-num-seqs (MAX_NUM_SEQS): expected an integer >= 1, got "0"');
  expect(sim.log()).toContain('ITL_MS: expected a number >= 0, got "fast"');
});

it('on SIGTERM refuses new requests with 503, finishes the streaming one, and exits 0', async () => {
  const sim = await processes.start(['--itl-ms', '40', '--prefill-us-per-token', '0']);
  const response = await fetch(`${sim.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(chat('a long answer', { max_tokens: 25, stream: true })),
  });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const first = await reader.read();
  expect(new TextDecoder().decode(first.value)).toContain('chat.completion.chunk');

  sim.proc.child.kill('SIGTERM');
  await waitFor('not ready while draining', async () => ((await fetch(`${sim.base}/readyz`)).status === 503) || undefined, { timeoutMs: 3_000, intervalMs: 20 });
  const refused = await post(sim.base, '/v1/chat/completions', chat('too late'));
  expect(refused.status).toBe(503);
  expect((refused.json as { error: { message: string } }).error.message).toMatch(/shutting down/);

  let rest = new TextDecoder().decode(first.value);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    rest += new TextDecoder().decode(value);
  }
  const events = parseSse(rest);
  expect(events[events.length - 1]).toBe('[DONE]');
  expect(events.filter((e) => e.includes('"content"')).length).toBe(26); // role chunk + 25 tokens
  expect(await exitCode(sim.proc)).toBe(0);
});

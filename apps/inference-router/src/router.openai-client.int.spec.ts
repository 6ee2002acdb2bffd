// The official `openai` client (not ours) against the router and a real engine-sim: what a user
// of the OpenAI SDK relies on, chat, streams with usage, completions, embeddings, the model
// list and errors, works without surprises.
import OpenAI from 'openai';
import { RouterHarness, type TestRouter } from './__fixtures__/router-harness';

let h: RouterHarness;
let router: TestRouter;
let client: OpenAI;

beforeAll(async () => {
  h = await RouterHarness.start();
  const engine = await h.engine([], 'sdk-model');
  await h.putDeployment('sdk', 'sdk-model', [engine.endpoint]);
  router = await h.router({ AUTH_REQUIRED: 'false' });
  await h.untilReplicas(router, 'sdk-model', 1);
  client = new OpenAI({ baseURL: `${router.base}/v1`, apiKey: 'not-needed', maxRetries: 0 });
});

afterAll(async () => h?.stop());

it('lists the model and answers a chat completion', async () => {
  const models = await client.models.list();
  expect(models.data.map((m) => m.id)).toEqual(['sdk-model']);
  const chat = await client.chat.completions.create({ model: 'sdk-model', messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 5 });
  expect(chat.object).toBe('chat.completion');
  expect(chat.choices[0].message.role).toBe('assistant');
  expect(chat.usage?.completion_tokens).toBe(5);
});

it('streams a chat completion, with the usage chunk when asked for', async () => {
  const stream = await client.chat.completions.create({
    model: 'sdk-model',
    messages: [{ role: 'user', content: 'Count' }],
    max_tokens: 6,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  expect(text.length).toBeGreaterThan(0);
  expect(usage?.completion_tokens).toBe(6);
});

it('answers completions and embeddings', async () => {
  const completion = await client.completions.create({ model: 'sdk-model', prompt: 'The capital of France is', max_tokens: 4 });
  expect(completion.object).toBe('text_completion');
  expect(completion.usage?.completion_tokens).toBe(4);
  const embedding = await client.embeddings.create({ model: 'sdk-model', input: ['a', 'b'] });
  expect(embedding.data).toHaveLength(2);
  expect(embedding.data[0].embedding.length).toBeGreaterThan(0);
});

it('raises the SDK’s own error types with the router’s message', async () => {
  const err = await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OpenAI.NotFoundError);
  expect((err as InstanceType<typeof OpenAI.NotFoundError>).status).toBe(404);
  expect((err as Error).message).toMatch(/no-such-model/);
  const bad = await client.chat.completions.create({ model: 'sdk-model', messages: [], max_tokens: -1 }).catch((e: unknown) => e);
  expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
});

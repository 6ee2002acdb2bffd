// KeyService validation over a real router's gRPC server (real NATS and Redis): a table of bad
// requests per method, each with the status a client gets and the field the message names, and
// fast-check properties that random and oversized requests get INVALID_ARGUMENT (or succeed),
// never INTERNAL or UNKNOWN.
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import fc from 'fast-check';
import { CreateKeyRequest } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { grpcError } from '@gpufleet/testing';
import { RouterHarness, type TestRouter } from './__fixtures__/router-harness';

const ADMIN = 'keys-validation-admin';
let h: RouterHarness;
let r: TestRouter;

beforeAll(async () => {
  h = await RouterHarness.start();
  r = await h.router({ GPUFLEET_ADMIN_TOKEN: ADMIN });
});

afterAll(() => h?.stop());

const md = () => {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${ADMIN}`);
  return { metadata };
};

const create = (request: Partial<CreateKeyRequest>) => callUnary(r.grpc, r.grpc.createKey, CreateKeyRequest.fromPartial({ name: 'k', allModels: true, ...request }), md());

interface Row {
  readonly input: string;
  readonly call: () => Promise<unknown>;
  readonly code?: status;
  readonly field: string;
}

describe('KeyService refusals', () => {
  const g = () => r.grpc;
  const rows: Row[] = [
    { input: 'CreateKey name of 129 characters', field: 'name', call: () => create({ name: 'n'.repeat(129) }) },
    { input: 'CreateKey no models and not all_models', field: 'models', call: () => create({ allModels: false, models: [] }) },
    { input: 'CreateKey models with all_models', field: 'models', call: () => create({ allModels: true, models: ['m'] }) },
    { input: 'CreateKey 257 models', field: 'models', call: () => create({ allModels: false, models: Array.from({ length: 257 }, (_, i) => `m${i}`) }) },
    { input: 'CreateKey empty model name', field: 'models[0]', call: () => create({ allModels: false, models: [''] }) },
    { input: 'CreateKey model name with spaces around', field: 'models[1]', call: () => create({ allModels: false, models: ['m', ' m '] }) },
    { input: 'CreateKey expires_at and expires_in_seconds', field: 'expires_in_seconds', call: () => create({ expiresAt: new Date(Date.now() + 60_000), expiresInSeconds: 60 }) },
    { input: 'CreateKey expires_in_seconds past ten years', field: 'expires_in_seconds', call: () => create({ expiresInSeconds: 2 ** 53 - 1 }) },
    { input: 'CreateKey expires_at in the past', field: 'expires_at', call: () => create({ expiresAt: new Date(Date.now() - 1_000) }) },
    { input: 'CreateKey bad label key', field: 'labels', call: () => create({ labels: { 'no spaces': 'x' } }) },
    { input: 'CreateKey 65 labels', field: 'labels', call: () => create({ labels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }) },
    { input: 'CreateKey label value of 257 characters', field: 'labels', call: () => create({ labels: { team: 'v'.repeat(257) } }) },
    { input: 'CreateKey a label of 2 MB (past NATS max_payload)', field: 'labels', call: () => create({ labels: { team: 'v'.repeat(2_000_000) } }) },
    { input: 'GetKey empty id', field: 'id', call: () => callUnary(g(), g().getKey, { id: '' }, md()) },
    { input: 'GetKey upper-case id', field: 'id', call: () => callUnary(g(), g().getKey, { id: 'AAAAAAAAAAAA' }, md()) },
    { input: 'GetKey unknown id', field: 'API key', code: status.NOT_FOUND, call: () => callUnary(g(), g().getKey, { id: 'aaaaaaaaaaaa' }, md()) },
    { input: 'RevokeKey 13-character id', field: 'id', call: () => callUnary(g(), g().revokeKey, { id: 'aaaaaaaaaaaaa' }, md()) },
    { input: 'RevokeKey unknown id', field: 'API key', code: status.NOT_FOUND, call: () => callUnary(g(), g().revokeKey, { id: 'bbbbbbbbbbbb' }, md()) },
    { input: 'GetUsage bad key id', field: 'key_id', call: () => callUnary(g(), g().getUsage, { keyId: 'x', days: 1, model: '' }, md()) },
    { input: 'GetUsage days past retention', field: 'days', call: () => callUnary(g(), g().getUsage, { keyId: '', days: 4_294_967_295, model: '' }, md()) },
    { input: 'GetUsage model of 257 characters', field: 'model', call: () => callUnary(g(), g().getUsage, { keyId: '', days: 1, model: 'm'.repeat(257) }, md()) },
  ];
  it.each(rows.map((row) => [row.input, row]))('%s', async (_input, row) => {
    const err = await grpcError(row.call());
    expect({ input: row.input, code: status[err.code], details: err.details }).toMatchObject({ input: row.input, code: status[row.code ?? status.INVALID_ARGUMENT] });
    expect(err.details).toContain(row.field);
    if ((row.code ?? status.INVALID_ARGUMENT) === status.INVALID_ARGUMENT) expect(String(err.metadata.get('gpufleet-field')[0])).toContain(row.field.split('[')[0]);
  });
});

describe('KeyService: random and oversized requests get INVALID_ARGUMENT (or succeed), never INTERNAL', () => {
  const text = fc.oneof(
    { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
    { weight: 1, arbitrary: fc.constantFrom('', ' m', 'aaaaaaaaaaaa', 'anonymous', '\u0000', 'a'.repeat(300), 'a'.repeat(200_000)) },
  );
  const labels = fc.oneof(
    { weight: 4, arbitrary: fc.dictionary(text, text, { maxKeys: 4 }) },
    { weight: 1, arbitrary: fc.constantFrom(Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, 'v'.repeat(200)])), { team: 'v'.repeat(900_000) }) },
  );
  const date = fc.oneof(fc.constant(undefined), fc.date({ noInvalidDate: true }), fc.constantFrom(new Date(8.64e15), new Date(-8.64e15), new Date(0)));

  async function acceptsOrRefuses(call: Promise<unknown>): Promise<void> {
    try {
      await call;
    } catch (e) {
      const err = e as ServiceError;
      const client = [status.INVALID_ARGUMENT, status.NOT_FOUND, status.RESOURCE_EXHAUSTED];
      if (!client.includes(err.code)) throw new Error(`got ${status[err.code] ?? 'no status'}: ${err.details ?? err.message}`);
      if (err.code === status.INVALID_ARGUMENT && !err.metadata.get('gpufleet-field')[0]) throw new Error(`INVALID_ARGUMENT without a field: ${err.details}`);
    }
  }

  it('CreateKey', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            name: text,
            allModels: fc.boolean(),
            models: fc.oneof(fc.array(text, { maxLength: 4 }), fc.constant(Array.from({ length: 300 }, (_, i) => `m${i}`))),
            expiresAt: date,
            expiresInSeconds: fc.oneof(fc.nat(), fc.constantFrom(0, 1, 2 ** 53 - 1)),
            limits: fc.record({ requestsPerMinute: fc.nat({ max: 2 ** 32 - 1 }), tokensPerMinute: fc.oneof(fc.nat(), fc.constant(2 ** 53 - 1)) }, { requiredKeys: [] }),
            labels,
          },
          { requiredKeys: [] },
        ),
        async (request) => {
          await acceptsOrRefuses(callUnary(r.grpc, r.grpc.createKey, CreateKeyRequest.fromPartial(request), md()));
        },
      ),
      // A label key of one space once came back without its field (HTTP/2 dropped the header).
      { numRuns: 60, examples: [[{ allModels: true, labels: { ' ': '' } }]] },
    );
  });

  it('GetKey, RevokeKey, GetUsage', async () => {
    await fc.assert(
      fc.asyncProperty(text, fc.nat({ max: 2 ** 32 - 1 }), text, async (id, days, model) => {
        await acceptsOrRefuses(callUnary(r.grpc, r.grpc.getKey, { id }, md()));
        await acceptsOrRefuses(callUnary(r.grpc, r.grpc.revokeKey, { id }, md()));
        await acceptsOrRefuses(callUnary(r.grpc, r.grpc.getUsage, { keyId: id, days, model }, md()));
      }),
      { numRuns: 60 },
    );
  });
});

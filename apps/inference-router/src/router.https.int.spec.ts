// The OpenAI API over HTTPS (API_TLS_CERT_FILE/KEY_FILE, certificates made with openssl): a
// client that trusts the CA gets its answer; plain HTTP on the same port gets none.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestCertificates, type TestCertificates } from '@gpufleet/testing';
import { chat, RouterHarness, type TestRouter } from './__fixtures__/router-harness';

let h: RouterHarness;
let router: TestRouter;
let certs: TestCertificates;
const dir = mkdtempSync(join(tmpdir(), 'gpufleet-router-https-'));

beforeAll(async () => {
  certs = makeTestCertificates(dir);
  h = await RouterHarness.start();
  const engine = await h.engine([], 'tls-model');
  await h.putDeployment('tls', 'tls-model', [engine.endpoint]);
  router = await h.router({ API_TLS_CERT_FILE: certs.cert, API_TLS_KEY_FILE: certs.key, AUTH_REQUIRED: 'false' });
  await h.untilReplicas(router, 'tls-model', 1);
});

afterAll(async () => {
  await h?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function httpsPost(url: string, body: unknown, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', ca, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

it('serves the OpenAI API over HTTPS to a client that trusts the CA, and nothing in plain text', async () => {
  const port = new URL(router.base).port;
  const res = await httpsPost(`https://127.0.0.1:${port}/v1/chat/completions`, chat('tls-model', 'hello'), readFileSync(certs.ca));
  expect(res.status).toBe(200);
  expect((JSON.parse(res.body) as { object: string }).object).toBe('chat.completion');

  // Without the CA the certificate is not trusted; plain HTTP gets no answer.
  await expect(httpsPost(`https://127.0.0.1:${port}/v1/chat/completions`, chat('tls-model', 'x'), Buffer.from(''))).rejects.toThrow();
  await expect(fetch(`http://127.0.0.1:${port}/v1/models`)).rejects.toThrow();
});

import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';

/** A running hostile engine: its base URL, the requests it holds, and how to stop it. */
export interface HostileEngine {
  readonly endpoint: string;
  /** Releases of the requests held open ("hold" in the body), oldest first. */
  readonly held: Array<() => void>;
  close(): Promise<void>;
}

/**
 * An OpenAI-looking engine that misbehaves, for tests of the router's bounds (real sockets):
 * `/health` and `/v1/models` answer normally (so it is routed to); a streamed request gets one
 * SSE event that never ends (64 KiB chunks of the same token, no blank line, every millisecond);
 * a request whose body contains "hold" gets its headers and then waits until released.
 */
export async function startHostileEngine(model = 'hostile'): Promise<HostileEngine> {
  const held: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    if (req.url === '/health' || req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model' }] }));
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (body.includes('"hold"')) {
        held.push(() => res.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })));
        res.writeHead(200, { 'content-type': 'application/json' });
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"');
      const chunk = 'a'.repeat(64 * 1024);
      const timer = setInterval(() => res.write(chunk), 1);
      res.on('close', () => clearInterval(timer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held,
    close: async () => {
      for (const release of held.splice(0)) release();
      await new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
    },
  };
}

/**
 * A hostile client: a POST whose 1000-byte body comes one byte every `intervalMs`. Resolves once
 * the server closes the socket, with what it answered and how long that took.
 */
export function sendBodySlowly(base: string, intervalMs = 300): Promise<{ answer: string; elapsedMs: number }> {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  const started = Date.now();
  socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{');
  const drip = setInterval(() => socket.write(' '), intervalMs);
  return new Promise((resolve) =>
    socket.on('close', () => {
      clearInterval(drip);
      resolve({ answer, elapsedMs: Date.now() - started });
    }),
  );
}

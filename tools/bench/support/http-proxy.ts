// The least an HTTP-aware proxy in Node does, the router benchmark's second reference: Node's
// http server in front, an undici Pool behind (as the router has), no validation, routing,
// metering or metrics. The router's added latency over this one is what its own logic costs.
//
//   node -r @swc-node/register tools/bench/support/http-proxy.ts <port> <upstream base URL>
import { createServer } from 'node:http';
import { Pool } from 'undici';

const [portArg, upstream] = process.argv.slice(2);
if (!portArg || !upstream) throw new Error('usage: http-proxy <port> <upstream base URL>');
const pool = new Pool(upstream, { connections: null, pipelining: 1, keepAliveTimeout: 4_000, headersTimeout: 0, bodyTimeout: 0 });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    res.on('drain', () => resume?.());
    let resume: (() => void) | undefined;
    pool.dispatch(
      { method: (req.method ?? 'GET') as 'GET' | 'POST', path: req.url ?? '/', headers: ['content-type', 'application/json'], body: Buffer.concat(chunks) },
      {
        onConnect: () => undefined,
        onError: () => res.destroy(),
        onHeaders: (status, raw, resumeSocket) => {
          resume = resumeSocket;
          const headers: Record<string, string> = {};
          for (let i = 0; i + 1 < raw.length; i += 2) {
            const name = raw[i].toString('latin1').toLowerCase();
            if (!HOP_BY_HOP.has(name)) headers[name] = raw[i + 1].toString('latin1');
          }
          res.writeHead(status, headers);
          return true;
        },
        onData: (chunk) => res.write(chunk),
        onComplete: () => res.end(),
      },
    );
  });
}).listen(Number(portArg), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));

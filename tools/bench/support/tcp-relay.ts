// A byte-for-byte TCP relay in Node, the router benchmark's floor: what any Node proxy pays for
// two more socket hops and event-loop wake-ups before it reads a single header. Each client
// connection gets its own connection to the next upstream in turn.
//
//   node -r @swc-node/register tools/bench/support/tcp-relay.ts <port> <host:port> [<host:port>…]
import { connect, createServer } from 'node:net';

const [portArg, ...upstreams] = process.argv.slice(2);
if (!portArg || upstreams.length === 0) throw new Error('usage: tcp-relay <port> <host:port>…');
let next = 0;

createServer({ noDelay: true }, (client) => {
  const [host, port] = upstreams[next++ % upstreams.length].split(':');
  const upstream = connect({ host, port: Number(port), noDelay: true });
  client.pipe(upstream);
  upstream.pipe(client);
  const close = (): void => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close).on('close', close);
  upstream.on('error', close).on('close', close);
}).listen(Number(portArg), '127.0.0.1');

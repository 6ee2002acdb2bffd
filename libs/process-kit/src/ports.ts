import { readFileSync } from 'fs';
import { createServer } from 'net';

/**
 * Thrown from a `waitFor` probe to end the wait at once: the thing waited for can no longer
 * happen (the process that should listen has exited), so waiting out the timeout only hides why.
 */
export class StopWaiting extends Error {}

/** Linux's range for the local ports of outgoing connections; ports handed out avoid it. */
export function outgoingPortRange(procFile = '/proc/sys/net/ipv4/ip_local_port_range'): [number, number] | undefined {
  try {
    const [low, high] = readFileSync(procFile, 'utf8').trim().split(/\s+/).map(Number);
    return Number.isInteger(low) && Number.isInteger(high) && low > 0 && high >= low ? [low, high] : undefined;
  } catch {
    return undefined;
  }
}

/** Lowest port freePort picks: clear of the well-known and most registered service ports. */
const LISTEN_RANGE_LOW = 10_000;
/** Ports this process handed out lately, not to be handed out again before they are bound. */
const handedOut = new Set<number>();
const HANDED_OUT_MAX = 1_024;

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => {
      const address = srv.address();
      const bound = typeof address === 'object' && address ? address.port : undefined;
      srv.close(() => resolve(bound));
    });
  });
}

function remember(port: number): number {
  handedOut.add(port);
  if (handedOut.size > HANDED_OUT_MAX) handedOut.delete(handedOut.values().next().value as number);
  return port;
}

/**
 * A TCP port free on 127.0.0.1 for a server about to start. The caller binds it later, so two
 * things could take it meanwhile, and both are kept away:
 * - an outgoing connection of any process on the machine, which gets its local port from the
 *   kernel's outgoing range: ports are picked below that range (Linux; elsewhere, or when the
 *   range leaves no room, the kernel picks);
 * - another freePort call in this process (a stack starts a dozen services, each given ports
 *   before any has bound them): a port is not handed out twice.
 * Another process may still pick the same port at the same moment; callers that can, retry.
 */
export async function freePort(range = outgoingPortRange()): Promise<number> {
  if (range && range[0] - LISTEN_RANGE_LOW >= 1_000) {
    for (let attempt = 0; attempt < 64; attempt++) {
      const candidate = LISTEN_RANGE_LOW + Math.floor(Math.random() * (range[0] - LISTEN_RANGE_LOW));
      if (handedOut.has(candidate)) continue;
      if ((await tryListen(candidate)) !== undefined) return remember(candidate);
    }
  }
  for (;;) {
    const port = await tryListen(0);
    if (port === undefined) throw new Error('no free TCP port on 127.0.0.1');
    if (!handedOut.has(port)) return remember(port);
  }
}

/** True when something accepts TCP connections on host:port. */
export function isPortOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const { connect } = require('net') as typeof import('net');
    const socket = connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Polls `probe` until it returns a value (not undefined or false). A probe that throws is tried
 * again (the last error is quoted at the timeout) unless it throws StopWaiting, which ends the wait.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  { timeoutMs = 10_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      if (err instanceof StopWaiting) throw err;
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  const why = lastError instanceof Error ? `: ${lastError.message}` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
}

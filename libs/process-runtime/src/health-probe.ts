import * as http from 'http';
import * as https from 'https';
import { connect } from 'net';
import type { HealthProbe } from '@gpufleet/process-spec';

export interface ProbeResult {
  healthy: boolean;
  /** e.g. "HTTP 200", "connection refused", "timed out after 1000 ms". */
  detail: string;
}

export type ProbeFn = (probe: HealthProbe, timeoutMs: number) => Promise<ProbeResult>;

/** An HTTP probe passes on 2xx and 3xx; a TCP probe when the port accepts a connection. */
export const probeHealth: ProbeFn = (probe, timeoutMs) => (probe.kind === 'http' ? probeHttp(probe.url, timeoutMs) : probeTcp(probe.port, probe.host ?? '127.0.0.1', timeoutMs));

export function describeProbe(probe: HealthProbe): string {
  return probe.kind === 'http' ? `GET ${probe.url}` : `TCP ${probe.host ?? '127.0.0.1'}:${probe.port}`;
}

function probeHttp(url: string, timeoutMs: number): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const client = url.startsWith('https:') ? https : http;
    let settled = false;
    const done = (result: ProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const req = client.get(url, { agent: false, headers: { 'user-agent': 'gpufleet-node-runtime' } }, (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      done({ healthy: status >= 200 && status < 400, detail: `HTTP ${status}` });
    });
    const timer = setTimeout(() => {
      done({ healthy: false, detail: `timed out after ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => done({ healthy: false, detail: err.code ?? err.message }));
  });
}

function probeTcp(port: number, host: string, timeoutMs: number): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ healthy: false, detail: `timed out after ${timeoutMs} ms` });
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ healthy: true, detail: 'connected' });
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ healthy: false, detail: err.code ?? err.message });
    });
  });
}

import { Controller, Get, Headers, HttpException, HttpStatus, Inject, Param, Query, Res } from '@nestjs/common';
import type { ServerResponse } from 'http';
import { podId, PodRuntimeStatus } from '@gpufleet/contracts';
import { isMultiNode, NODE_RUNTIME_CONFIG, NodeRuntimeConfig, nodeNamesOf } from '../config';
import { PodRuntimeService } from '../runtime/pod-runtime.service';
import { adminTokenProblem } from './admin-token';
import { readAppended, tailLines } from './log-file';

const DEFAULT_TAIL = 200;
const MAX_TAIL = 100_000;
/** How often a followed log is checked for new lines. */
const FOLLOW_POLL_MS = 200;
const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

interface PodParams {
  /** Set on the `/nodes/<node>/v1/pods/…` routes of a runtime of several nodes. */
  node?: string;
  namespace: string;
  workload: string;
  podSet: string;
  replica: string;
  pod: string;
}

/**
 * This node's pods over HTTP, next to /healthz, /readyz and /metrics: the list, and each pod's
 * log (how `gpufleet logs` reads them, through the runtime_url in the pod's status). A runtime
 * of several simulated nodes serves each node under `/nodes/<node>` too (its pods' runtime_url);
 * `/v1/pods` then covers all of them.
 */
@Controller()
export class PodsController {
  constructor(
    private readonly runtime: PodRuntimeService,
    @Inject(NODE_RUNTIME_CONFIG) private readonly config: NodeRuntimeConfig,
  ) {}

  /** `{ node, nodes, pods }`: `node` is NODE_NAME (or the node asked for), `nodes` every node whose pods are listed. */
  @Get(['v1/pods', 'nodes/:node/v1/pods'])
  list(
    @Param('node') node: string | undefined,
    @Headers('authorization') authorization: string | undefined,
  ): { node: string; nodes: string[]; sandbox: { enabled: boolean; detail: string }; pods: unknown[] } {
    const refused = adminTokenProblem(authorization, this.config.GPUFLEET_ADMIN_TOKEN);
    if (refused) throw new HttpException({ error: { code: 'UNAUTHENTICATED', message: refused } }, HttpStatus.UNAUTHORIZED);
    if (node !== undefined && !this.runtime.has(node)) throw notHere(node, this.config);
    const nodes = node === undefined ? nodeNamesOf(this.config) : [node];
    return { node: node ?? this.config.NODE_NAME, nodes, sandbox: this.runtime.sandbox, pods: this.runtime.statuses(node).map((s) => PodRuntimeStatus.toJSON(s)) };
  }

  /**
   * `?tail=N` (default 200) last lines as text/plain; `?follow=1` keeps the response open and
   * streams lines as they are appended, until the client disconnects or the pod stops.
   * `?process=sshd`: an instance's sshd log instead of its command's.
   */
  @Get(['v1/pods/:namespace/:workload/:podSet/:replica/:pod/logs', 'nodes/:node/v1/pods/:namespace/:workload/:podSet/:replica/:pod/logs'])
  logs(
    @Param() params: PodParams,
    @Query('tail') tailParam: string | undefined,
    @Query('follow') followParam: string | undefined,
    @Query('process') processParam: string | undefined,
    @Headers('authorization') authorization: string | undefined,
    @Res() res: ServerResponse,
  ): void {
    const refused = adminTokenProblem(authorization, this.config.GPUFLEET_ADMIN_TOKEN);
    if (refused) return sendJson(res, 401, { error: { code: 'UNAUTHENTICATED', message: refused } });
    const bad = (message: string): void => sendJson(res, 400, { error: { code: 'INVALID_ARGUMENT', message } });
    for (const field of ['namespace', 'workload', 'podSet'] as const) {
      if (!NAME.test(params[field])) return bad(`${field} ${JSON.stringify(params[field])} is not a DNS-1123 label`);
    }
    for (const field of ['replica', 'pod'] as const) {
      if (!/^\d{1,9}$/.test(params[field])) return bad(`${field} ${JSON.stringify(params[field])} is not a non-negative integer`);
    }
    const tail = tailParam === undefined || tailParam === '' ? DEFAULT_TAIL : Number(tailParam);
    if (!Number.isInteger(tail) || tail < 0 || tail > MAX_TAIL) return bad(`tail must be an integer 0-${MAX_TAIL}, got ${JSON.stringify(tailParam)}`);
    const follow = followParam === '1' || followParam === 'true';
    if (followParam !== undefined && !follow && followParam !== '0' && followParam !== 'false') return bad(`follow must be 1 or 0, got ${JSON.stringify(followParam)}`);
    if (processParam !== undefined && processParam !== 'main' && processParam !== 'sshd') return bad(`process must be main or sshd, got ${JSON.stringify(processParam)}`);

    if (params.node !== undefined && !this.runtime.has(params.node)) {
      const { status, body } = notHereBody(params.node, this.config);
      return sendJson(res, status, body);
    }
    const ref = { namespace: params.namespace, workload: params.workload, podSet: params.podSet, replica: Number(params.replica), pod: Number(params.pod) };
    const pods = this.runtime.nodeOf(ref, params.node);
    if (!pods) {
      const where = params.node ?? (isMultiNode(this.config) ? `any of the ${nodeNamesOf(this.config).length} nodes of this runtime` : this.config.NODE_NAME);
      sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `pod ${podId(ref)} is not here on ${params.node || !isMultiNode(this.config) ? 'node ' : ''}${where}` } });
      return;
    }
    const file = pods.logFile(ref, processParam === 'sshd' ? 'sshd' : 'main');
    if (!file) {
      sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `pod ${podId(ref)} on node ${pods.node} is not a GPU instance: it has no sshd log` } });
      return;
    }

    let tailed: { text: Buffer; end: number };
    try {
      tailed = tailLines(file, tail);
    } catch (err) {
      sendJson(res, 500, { error: { code: 'INTERNAL', message: `log ${file} of pod ${podId(ref)} cannot be read: ${(err as Error).message}` } });
      return;
    }
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const { text, end } = tailed;
    if (!follow) {
      res.end(text);
      return;
    }
    // Sent at once, so a client sees the stream open even when the pod is silent.
    res.flushHeaders();
    if (text.length > 0) res.write(text);
    let offset = end;
    let closed = false;
    const timer = setInterval(() => {
      const { data, next } = readAppended(file, offset);
      offset = next;
      if (data.length > 0) res.write(data);
      if (!pods.isRunning(ref)) finish();
    }, FOLLOW_POLL_MS);
    const finish = (): void => {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      res.end();
    };
    // The response closes when the client goes away (or once finish() ended it).
    res.on('close', finish);
  }
}

function notHereBody(node: string, config: NodeRuntimeConfig): { status: number; body: unknown } {
  const nodes = nodeNamesOf(config);
  const shown = nodes.slice(0, 5).join(', ') + (nodes.length > 5 ? `, … (${nodes.length} in all)` : '');
  return { status: 404, body: { error: { code: 'NOT_FOUND', message: `node ${JSON.stringify(node)} is not run by this runtime; it runs ${shown}` } } };
}

function notHere(node: string, config: NodeRuntimeConfig): HttpException {
  const { status, body } = notHereBody(node, config);
  return new HttpException(body as Record<string, unknown>, status);
}

/** The response is ours (@Res()), so errors are written directly, in the shape of every gpufleet HTTP error. */
function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

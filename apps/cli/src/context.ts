import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'fs';
import { homedir } from 'os';
import { join, resolve } from 'path';
import { readLogin } from './login';

/** How other commands find a running stack: written by `gpufleet up` to $GPUFLEET_HOME/context.json. */
export interface StackContext {
  cluster: string;
  natsUrl: string;
  /** host:port of the scheduler's gRPC API. */
  scheduler: string;
  schedulerHttp: string;
  /** Base URL of the inference-router's OpenAI API (append /v1). Absent in contexts of older stacks. */
  router?: string;
  /** host:port of the inference-router's gRPC KeyService. */
  routerGrpc?: string;
  /** host:port of model delivery's gRPC ModelDeliveryService. Absent in contexts of older stacks. */
  delivery?: string;
  /** Redis of the router's rate limits and usage counters. */
  redisUrl?: string;
  /** pid of the `gpufleet up` process that owns the stack. */
  pid: number;
  startedAt: string;
  fleetFile?: string;
  logsDir: string;
}

export function resolveHome(flag?: string): string {
  return resolve(flag ?? process.env.GPUFLEET_HOME ?? join(homedir(), '.gpufleet'));
}

export function contextPath(home: string): string {
  return join(home, 'context.json');
}

export function writeContext(home: string, ctx: StackContext): void {
  mkdirSync(home, { recursive: true });
  const tmp = `${contextPath(home)}.tmp`;
  writeFileSync(tmp, JSON.stringify(ctx, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, contextPath(home)); // atomic: readers never see half a file
}

export function removeContext(home: string): void {
  rmSync(contextPath(home), { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The context of a live stack, undefined when none runs from this home (stale files are ignored). */
export function readLiveContext(home: string): StackContext | undefined {
  const path = contextPath(home);
  if (!existsSync(path)) return undefined;
  const ctx = JSON.parse(readFileSync(path, 'utf8')) as StackContext;
  return alive(ctx.pid) ? ctx : undefined;
}

const NO_STACK = (home: string, flag: string) =>
  `no running gpufleet stack found in ${home} (context.json missing or its process is gone); start one with \`gpufleet up\`, pass ${flag} HOST:PORT, or log in to a cluster with \`gpufleet auth login ${flag} HOST:PORT --token …\``;

/** Where the scheduler listens: --scheduler, else the local stack of this home, else the saved login's. */
export function requireContext(home: string, schedulerFlag?: string): Pick<StackContext, 'scheduler' | 'natsUrl' | 'cluster'> {
  const remote = (scheduler: string) => ({ scheduler, natsUrl: process.env.NATS_URL ?? 'nats://127.0.0.1:4222', cluster: process.env.GPUFLEET_CLUSTER ?? 'dev' });
  if (schedulerFlag) return remote(schedulerFlag);
  const ctx = readLiveContext(home);
  if (ctx) return ctx;
  const login = readLogin(home);
  if (login?.scheduler) return remote(login.scheduler);
  throw new Error(NO_STACK(home, '--scheduler'));
}

/** Where the router's KeyService listens: --router, else the stack context, else the saved login's. */
export function requireRouter(home: string, routerFlag?: string): { grpc: string; http?: string } {
  if (routerFlag) return { grpc: routerFlag };
  const ctx = readLiveContext(home);
  if (!ctx) {
    const login = readLogin(home);
    if (login?.router) return { grpc: login.router };
    throw new Error(NO_STACK(home, '--router'));
  }
  if (!ctx.routerGrpc) throw new Error(`the gpufleet stack running from ${home} has no inference-router in its context (started by an older gpufleet); restart it with \`gpufleet up\` or pass --router HOST:PORT`);
  return { grpc: ctx.routerGrpc, http: ctx.router };
}

/** Where model delivery's ModelDeliveryService listens: --delivery, else the stack context, else the saved login's. */
export function requireDelivery(home: string, flag?: string): string {
  if (flag) return flag;
  const ctx = readLiveContext(home);
  if (!ctx) {
    const login = readLogin(home);
    if (login?.delivery) return login.delivery;
    throw new Error(NO_STACK(home, '--delivery'));
  }
  if (!ctx.delivery) throw new Error(`the gpufleet stack running from ${home} has no model delivery in its context (started by an older gpufleet); restart it with \`gpufleet up\` or pass --delivery HOST:PORT`);
  return ctx.delivery;
}

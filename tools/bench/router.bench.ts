// `npm run bench -- router [--duration 5] [--warmup 1] [--rounds 3] [--concurrency 64] [--engines 2] [--max-tokens 16]`
//
// What the inference router adds to a request, next to nginx as a plain reverse proxy, in the
// same run on the same machine and engines. engine-sim replicas run at zero latency, so the
// engines cost as little as possible and the proxies' own cost shows.
//
// 1. Added latency: one request at a time (concurrency 1), in turn straight to an engine,
//    through nginx and through the router (interleaved, so the machine's noise hits all three
//    alike); added p50/p99 = proxy − direct. Non-streamed and streamed.
//    Two references in Node are measured alongside: a byte-for-byte TCP relay
//    (support/tcp-relay.ts), which parses no HTTP at all, and a minimal HTTP proxy
//    (support/http-proxy.ts: Node's http server and an undici Pool, as the router has, and no
//    logic), whose added latency is the floor for an HTTP-aware proxy written in Node.
// 2. Capacity: `--concurrency` closed-loop keep-alive clients through each proxy, non-streamed
//    and streamed (16 chunks + usage); requests/s, and the CPU time the proxy used meanwhile
//    (from /proc), as requests per CPU second: what one core would serve. The router is one
//    Node process; nginx runs `worker_processes 1`, so both proxy on one core. The proxies take
//    turns over `--rounds` rounds and each figure is the median of its rounds. On a small
//    machine the load generator and the engines share the cores with the proxy and cap the
//    wall-clock figure; requests per CPU second does not depend on what else runs.
//
// The router runs as `gpufleet up` starts it, without API keys (AUTH_REQUIRED=false), with its
// default routing policy (cache_aware) over replicas it learns from the deployments bucket.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'nats';
import { Buckets, DeploymentPhase, ModelDeployment } from '@gpufleet/contracts';
import { KvStore } from '@gpufleet/messaging';
import { freePort, requireBinary, startNats, startRedis, waitFor } from '@gpufleet/testing';
import { drive, driveInterleaved, processFamily, REPO_ROOT, RESULT_HEADER, row, startProcess, type LoadOptions, type Result, type Started } from './support/http-load';

const MODEL = 'bench-model';
const CLUSTER = 'bench';
const TS_NODE = ['-r', 'reflect-metadata', '-r', '@swc-node/register'];

interface Options extends LoadOptions {
  engines: number;
  maxTokens: number;
  /** Capacity rounds; each capacity figure is the median over them. */
  rounds: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Rounds of one phase as one result: totals summed, rates and percentiles their medians. */
function medianOf(name: string, rounds: Result[]): Result {
  return {
    name,
    requests: rounds.reduce((n, r) => n + r.requests, 0),
    errors: rounds.reduce((n, r) => n + r.errors, 0),
    seconds: rounds.reduce((n, r) => n + r.seconds, 0),
    rps: median(rounds.map((r) => r.rps)),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    cpuSeconds: rounds.reduce((n, r) => n + r.cpuSeconds, 0),
    rpsPerCore: median(rounds.map((r) => r.rpsPerCore)),
  };
}

function parseOptions(args: string[]): Options {
  const options: Options = { durationS: 5, warmupS: 1, concurrency: 64, engines: 2, maxTokens: 16, rounds: 3 };
  const names: Record<string, Exclude<keyof Options, 'cpuOf'>> = {
    '--duration': 'durationS',
    '--warmup': 'warmupS',
    '--concurrency': 'concurrency',
    '--engines': 'engines',
    '--max-tokens': 'maxTokens',
    '--rounds': 'rounds',
  };
  for (let i = 0; i < args.length; i += 2) {
    const key = names[args[i]];
    if (!key) throw new Error(`unknown option ${args[i]} (expected ${Object.keys(names).join(', ')})`);
    const value = Number(args[i + 1]);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`${args[i]}: expected a positive number, got ${args[i + 1]}`);
    options[key] = value;
  }
  return options;
}

/** nginx from the OS packages, installed by the bootstrap script when missing. */
function requireNginx(): string {
  const found = spawnSync('bash', ['-c', 'command -v nginx || ls /usr/sbin/nginx 2>/dev/null'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found.split('\n')[0];
  const res = spawnSync('bash', [join(REPO_ROOT, 'tools/scripts/bootstrap.sh'), 'nginx'], { stdio: 'inherit' });
  if (res.status !== 0) throw new Error('nginx is needed as the reference proxy: install it (apt-get install nginx) and run again');
  return requireBinary('nginx');
}

function nginxConfig(dir: string, port: number, upstreams: string[]): string {
  const asRoot = process.getuid?.() === 0;
  return `
${asRoot ? 'user root;' : ''}
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  keepalive_requests 1000000;
  upstream engines {
${upstreams.map((u) => `    server ${u};`).join('\n')}
    keepalive 256;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port} reuseport;
    location / {
      proxy_pass http://engines;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`;
}

async function startEngine(i: number): Promise<Started> {
  const port = await freePort();
  return startProcess(
    `engine-sim ${i}`,
    process.execPath,
    [
      ...TS_NODE, join(REPO_ROOT, 'apps/engine-sim/src/main.ts'),
      '--model', MODEL, '--port', String(port), '--host', '127.0.0.1', '--replica-name', `e${i}`,
      '--itl-ms', '0', '--prefill-us-per-token', '0', '--max-num-seqs', '1024',
    ],
    `http://127.0.0.1:${port}`,
    '/readyz',
  );
}

/** The deployment record the scheduler would keep: every engine a Ready server replica. */
function deploymentOf(endpoints: string[]): ModelDeployment {
  return ModelDeployment.fromPartial({
    spec: { name: 'bench', namespace: 'bench', model: `/models/${MODEL}`, servedModelName: MODEL, roles: [{ role: 'server', replicas: endpoints.length, size: 1 }] },
    status: {
      phase: DeploymentPhase.DEPLOYMENT_PHASE_READY,
      desiredReplicas: endpoints.length,
      readyReplicas: endpoints.length,
      replicas: endpoints.map((endpoint, ordinal) => ({ role: 'server', ordinal, workload: `bench-s${ordinal}`, state: 'Ready', endpoint, updated: true })),
      endpoints,
    },
    generation: 1,
  });
}

export async function run(args: string[]): Promise<void> {
  const options = parseOptions(args);
  const nginxBin = requireNginx();
  console.log(
    `router vs nginx over ${options.engines} engine-sim replicas at zero latency; latency at concurrency 1, ` +
      `capacity at concurrency ${options.concurrency}; ${options.warmupS} s warm-up + ${options.durationS} s per phase, max_tokens ${options.maxTokens}`,
  );
  const chat = {
    model: MODEL,
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'Summarise the state of the fleet in one sentence.' },
    ],
    max_tokens: options.maxTokens,
    ignore_eos: true,
  };
  const streamChat = { ...chat, stream: true, stream_options: { include_usage: true } };
  const isCompletion = (text: string): boolean => text.includes('"chat.completion"');
  const isStream = (text: string): boolean => text.endsWith('data: [DONE]\n\n') && text.includes('"usage":{');

  const stops: Array<() => Promise<void>> = [];
  try {
    const [nats, redis] = await Promise.all([startNats(), startRedis()]);
    stops.push(() => nats.stop(), () => redis.stop());
    const engines: Started[] = [];
    for (let i = 0; i < options.engines; i++) engines.push(await startEngine(i));
    stops.push(...engines.map((e) => () => e.stop()));

    const nc = await connect({ servers: nats.url });
    stops.push(() => nc.close());
    const store = await KvStore.open(nc.jetstream(), Buckets.deployments(CLUSTER), ModelDeployment);
    await store.put('bench.bench', deploymentOf(engines.map((e) => e.base)));

    const [httpPort, opsPort, grpcPort, nginxPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const router = await startProcess(
      'inference-router',
      process.execPath,
      // BENCH_ROUTER_NODE_FLAGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", to profile the router.
      [...(process.env.BENCH_ROUTER_NODE_FLAGS ?? '').split(' ').filter(Boolean), ...TS_NODE, join(REPO_ROOT, 'apps/inference-router/src/main.ts')],
      `http://127.0.0.1:${opsPort}`,
      '/readyz',
      {
        GPUFLEET_CLUSTER: CLUSTER,
        NATS_URL: nats.url,
        REDIS_URL: redis.url,
        HTTP_PORT: String(httpPort),
        OPS_PORT: String(opsPort),
        GRPC_PORT: String(grpcPort),
        AUTH_REQUIRED: 'false',
      },
    );
    stops.push(() => router.stop());
    const routerBase = `http://127.0.0.1:${httpPort}`;
    await waitFor(
      'the router to list the bench model',
      async () => {
        const res = await fetch(`${routerBase}/v1/models`).catch(() => undefined);
        return (res?.status === 200 && (await res.text()).includes(MODEL)) || undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );

    const dir = mkdtempSync(join(tmpdir(), 'gpufleet-bench-nginx-'));
    chmodSync(dir, 0o755);
    for (const sub of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, sub));
    writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, nginxPort, engines.map((e) => new URL(e.base).host)));
    const nginx = await startProcess('nginx', nginxBin, ['-c', join(dir, 'nginx.conf'), '-p', dir], `http://127.0.0.1:${nginxPort}`, '/health');
    stops.push(() => nginx.stop());
    const nginxPids = processFamily(nginx.child.pid as number);
    const routerPids = [router.child.pid as number];

    const relayPort = await freePort();
    const relay = await startProcess(
      'tcp relay',
      process.execPath,
      [...TS_NODE, join(REPO_ROOT, 'tools/bench/support/tcp-relay.ts'), String(relayPort), ...engines.map((e) => new URL(e.base).host)],
      `http://127.0.0.1:${relayPort}`,
      '/health',
    );
    stops.push(() => relay.stop());
    const httpProxyPort = await freePort();
    const httpProxy = await startProcess(
      'minimal Node HTTP proxy',
      process.execPath,
      [...TS_NODE, join(REPO_ROOT, 'tools/bench/support/http-proxy.ts'), String(httpProxyPort), engines[0].base],
      `http://127.0.0.1:${httpProxyPort}`,
      '/health',
    );
    stops.push(() => httpProxy.stop());

    const results: Result[] = [];
    const latency = async (what: string, payload: unknown, check: (t: string) => boolean): Promise<Result[]> => {
      const targets = [
        { name: `direct to one engine, ${what}, c=1`, base: engines[0].base },
        { name: `Node TCP relay (floor), ${what}, c=1`, base: relay.base },
        { name: `minimal Node HTTP proxy, ${what}, c=1`, base: httpProxy.base },
        { name: `nginx, ${what}, c=1`, base: nginx.base },
        { name: `router, ${what}, c=1`, base: routerBase },
      ];
      const measured = await driveInterleaved(targets, payload, options, check);
      results.push(...measured);
      return measured;
    };
    const [directPlain, relayPlain, httpPlain, nginxPlain, routerPlain] = await latency('non-streamed', chat, isCompletion);
    const [directStream, relayStream, httpStream, nginxStream, routerStream] = await latency('streamed', streamChat, isStream);
    const c = options.concurrency;
    const nginxLoad: LoadOptions = { ...options, cpuOf: nginxPids };
    const routerLoad: LoadOptions = { ...options, cpuOf: routerPids };
    // Capacity in rounds that alternate the proxies, each figure the median of its rounds: a
    // busy spell of the machine then spoils one round of each, not all of one proxy's.
    const rounds: Result[][] = [[], [], [], []];
    for (let round = 1; round <= options.rounds; round++) {
      const of = ` (round ${round})`;
      rounds[0].push(await drive(`nginx, non-streamed, c=${c}${of}`, nginx.base, chat, nginxLoad, isCompletion));
      rounds[1].push(await drive(`router, non-streamed, c=${c}${of}`, routerBase, chat, routerLoad, isCompletion));
      rounds[2].push(await drive(`nginx, streamed, c=${c}${of}`, nginx.base, streamChat, nginxLoad, isStream));
      rounds[3].push(await drive(`router, streamed, c=${c}${of}`, routerBase, streamChat, routerLoad, isStream));
    }
    const [nginxMax, routerMax, nginxMaxStream, routerMaxStream] = rounds.map((r) => medianOf(r[0].name.replace(/ \(round 1\)$/, ` (median of ${options.rounds})`), r));
    results.push(...rounds.flat(), nginxMax, routerMax, nginxMaxStream, routerMaxStream);

    const added = (proxy: Result, direct: Result, p: 'p50' | 'p99') => proxy[p] - direct[p];
    console.log('');
    for (const line of RESULT_HEADER) console.log(line);
    for (const r of results) console.log(row(r));
    console.log('');
    console.log('| added latency (proxy − direct) | router ms | nginx ms | minimal Node HTTP proxy ms | Node TCP relay ms | router / nginx |');
    console.log('| --- | --- | --- | --- | --- | --- |');
    for (const [what, proxyR, proxyN, httpR, floorR, direct] of [
      ['non-streamed p50', routerPlain, nginxPlain, httpPlain, relayPlain, directPlain],
      ['non-streamed p99', routerPlain, nginxPlain, httpPlain, relayPlain, directPlain],
      ['streamed p50', routerStream, nginxStream, httpStream, relayStream, directStream],
      ['streamed p99', routerStream, nginxStream, httpStream, relayStream, directStream],
    ] as const) {
      const p = what.endsWith('p50') ? 'p50' : 'p99';
      const r = added(proxyR, direct, p);
      const n = added(proxyN, direct, p);
      console.log(`| ${what} | ${r.toFixed(3)} | ${n.toFixed(3)} | ${added(httpR, direct, p).toFixed(3)} | ${added(floorR, direct, p).toFixed(3)} | ${(r / n).toFixed(2)} |`);
    }
    console.log('');
    console.log(`ratio router / nginx requests/s (non-streamed, c=${c}): ${(routerMax.rps / nginxMax.rps).toFixed(2)}`);
    console.log(`ratio router / nginx requests/s (streamed, c=${c}): ${(routerMaxStream.rps / nginxMaxStream.rps).toFixed(2)}`);
    console.log(`ratio router / nginx requests per CPU second (non-streamed, c=${c}): ${(routerMax.rpsPerCore / nginxMax.rpsPerCore).toFixed(2)}`);
    const addedRouter = added(routerPlain, directPlain, 'p50');
    const addedNginx = added(nginxPlain, directPlain, 'p50');
    const addedFloor = added(relayPlain, directPlain, 'p50');
    const addedHttp = added(httpPlain, directPlain, 'p50');
    console.log(`ratio Node TCP relay / nginx added p50 (a Node process that parses nothing): ${(addedFloor / addedNginx).toFixed(2)}`);
    console.log(`ratio minimal Node HTTP proxy / nginx added p50 (Node's http server + undici, no logic): ${(addedHttp / addedNginx).toFixed(2)}`);
    console.log(`goal: added p50 within 1.5x of nginx's: ${addedRouter <= 1.5 * addedNginx ? 'met' : 'NOT met'} (${(addedRouter / addedNginx).toFixed(2)}x)`);
    console.log(`goal: >= 3000 requests/s on one core (requests per router CPU second, non-streamed): ${routerMax.rpsPerCore >= 3000 ? 'met' : 'NOT met'}`);
    console.log('');
    console.log(`added_p50_ms_router: ${addedRouter.toFixed(3)}`);
    console.log(`added_p50_ms_nginx: ${addedNginx.toFixed(3)}`);
    console.log(`added_p50_ms_node_tcp_relay: ${addedFloor.toFixed(3)}`);
    console.log(`added_p50_ms_node_http_proxy: ${addedHttp.toFixed(3)}`);
    console.log(`added_p99_ms_router: ${added(routerPlain, directPlain, 'p99').toFixed(3)}`);
    console.log(`router_requests_per_second: ${Math.round(routerMax.rps)}`);
    console.log(`router_requests_per_cpu_second: ${Math.round(routerMax.rpsPerCore)}`);
    console.log(`router_requests_per_cpu_second_streamed: ${Math.round(routerMaxStream.rpsPerCore)}`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

// `npm run bench -- routing-quality [--duration 25] [--warmup 5] [--users 48] [--policies round_robin,least_request,cache_aware] …`
// (`--help` lists every option)
//
// How well each routing policy of the inference router uses the engines' prefix caches on a
// shared-prefix chat workload: closed-loop users, each holding multi-turn conversations under
// one of a few long system prompts, streamed through one inference-router process to 8
// engine-sim replicas with a latency model (prefill per uncached prompt token, inter-token
// latency, slowdown with batch size, a KV cache of limited blocks with LRU prefix caching).
//
// Per policy, on fresh engines (cold caches) and a fresh router: warm-up, then a measured
// window. Hit rate from the engines' vllm:prefix_cache_hits_total / queries_total (the delta
// over the window, summed over replicas); TTFT at the client (request sent to first content
// chunk); load from the replica header of each answer. round_robin is the baseline of the same
// run; the goal from the issue: cache_aware at least 3× its hit rate and at most half its p99
// TTFT, with no replica above 1.5× the mean load. Anchors: SGLang's router reports up to 1.9×
// throughput and 3.8× cache hit rate over round robin.
import { Agent } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { countTokens } from '@gpufleet/openai-protocol';
import { freePort } from '@gpufleet/process-kit';
import { ROUTING_POLICY_NAMES } from '@gpufleet/routing-core';
import { streamChat, type ChatMessage } from './support/chat-stream';
import { BenchFleet, engineEndpoint, freePorts, putDeployment, scrape, sumSeries, type EngineSimProcess, type RouterProcess } from './support/router-fleet';
import { SharedPrefixWorkload, type Range } from './support/shared-prefix-workload';

const MODEL = 'bench/shared-prefix-model';
const DEPLOYMENT = 'routing-quality';
const POLICIES = ['round_robin', 'least_request', 'cache_aware'] as const;
type Policy = (typeof POLICIES)[number];
const BLOCK_SIZE = 16;

// ---------------------------------------------------------------- options

interface Options {
  durationS: number;
  warmupS: number;
  users: number;
  replicas: number;
  systemPrompts: number;
  systemPromptTokens: Range;
  turns: Range;
  userMessageTokens: Range;
  answerTokens: Range;
  thinkMs: Range;
  kvCacheBlocks: number;
  maxNumSeqs: number;
  prefillUsPerToken: number;
  itlMs: number;
  loadSlowdown: number;
  jitter: number;
  seed: number;
  policies: Policy[];
  /** Router variables for cache_aware; unset ones keep the router's defaults. */
  cacheThreshold?: number;
  balanceAbs?: number;
  balanceRel?: number;
  prefixChars?: number;
  keepLogs: boolean;
}

const DEFAULTS: Options = {
  durationS: 25,
  warmupS: 5,
  users: 48,
  replicas: 8,
  systemPrompts: 8,
  systemPromptTokens: { min: 2000, max: 3000 },
  turns: { min: 3, max: 8 },
  userMessageTokens: { min: 15, max: 60 },
  answerTokens: { min: 24, max: 64 },
  thinkMs: { min: 500, max: 1500 },
  kvCacheBlocks: 384,
  maxNumSeqs: 16,
  prefillUsPerToken: 80,
  itlMs: 4,
  loadSlowdown: 0.5,
  jitter: 0.1,
  seed: 42,
  policies: [...POLICIES],
  keepLogs: false,
};

const USAGE =
  'options: --duration S --warmup S --users N --replicas N --system-prompts N --system-prompt-tokens MIN-MAX --turns MIN-MAX ' +
  '--user-tokens MIN-MAX --answer-tokens MIN-MAX --think-ms MIN-MAX --kv-cache-blocks N --max-num-seqs N --prefill-us US --itl-ms MS ' +
  '--load-slowdown X --jitter X --seed N --policies a,b,c --cache-threshold X --balance-abs N --balance-rel X --prefix-chars N --keep-logs';

function parseOptions(args: string[]): Options {
  const o: Options = { ...DEFAULTS, policies: [...DEFAULTS.policies] };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag === '--help') {
      console.log(USAGE);
      process.exit(0);
    }
    if (flag === '--keep-logs') {
      o.keepLogs = true;
      continue;
    }
    const raw = args[i + 1];
    if (raw === undefined) throw new Error(`${flag}: expected a value (${USAGE})`);
    i++;
    const number = (min: number, integer = false, max = Infinity): number => {
      const value = Number(raw);
      const what = integer ? 'an integer' : 'a number';
      if (raw.trim() === '' || !Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min || value > max) {
        throw new Error(`${flag}: expected ${what} ${max === Infinity ? `>= ${min}` : `${min}-${max}`}, got "${raw}"`);
      }
      return value;
    };
    const range = (min: number): Range => {
      const m = /^(\d+)(?:-(\d+))?$/.exec(raw.trim());
      const lo = m ? Number(m[1]) : NaN;
      const hi = m ? Number(m[2] ?? m[1]) : NaN;
      if (!m || lo < min || hi < lo) throw new Error(`${flag}: expected MIN-MAX, integers with ${min} <= MIN <= MAX (or one integer), got "${raw}"`);
      return { min: lo, max: hi };
    };
    switch (flag) {
      case '--duration': o.durationS = number(1); break;
      case '--warmup': o.warmupS = number(0); break;
      case '--users': o.users = number(1, true); break;
      case '--replicas': o.replicas = number(1, true); break;
      case '--system-prompts': o.systemPrompts = number(1, true); break;
      case '--system-prompt-tokens': o.systemPromptTokens = range(16); break;
      case '--turns': o.turns = range(1); break;
      case '--user-tokens': o.userMessageTokens = range(1); break;
      case '--answer-tokens': o.answerTokens = range(1); break;
      case '--think-ms': o.thinkMs = range(0); break;
      case '--kv-cache-blocks': o.kvCacheBlocks = number(1, true); break;
      case '--max-num-seqs': o.maxNumSeqs = number(1, true); break;
      case '--prefill-us': o.prefillUsPerToken = number(0); break;
      case '--itl-ms': o.itlMs = number(0); break;
      case '--load-slowdown': o.loadSlowdown = number(0); break;
      case '--jitter': o.jitter = number(0, false, 1); break;
      case '--seed': o.seed = number(0, true); break;
      case '--cache-threshold': o.cacheThreshold = number(0, false, 1); break;
      case '--balance-abs': o.balanceAbs = number(0, true); break;
      case '--balance-rel': o.balanceRel = number(1); break;
      case '--prefix-chars': o.prefixChars = number(1, true); break;
      case '--policies': {
        const names = raw.split(',').map((s) => s.trim());
        for (const name of names) {
          if (!(POLICIES as readonly string[]).includes(name)) {
            const why = (ROUTING_POLICY_NAMES as readonly string[]).includes(name) ? ' (not measured here: it needs a session header)' : '';
            throw new Error(`--policies: expected a comma-separated subset of ${POLICIES.join(', ')}, got "${name}"${why}`);
          }
        }
        if (!names.includes('round_robin')) throw new Error(`--policies: must include round_robin, the baseline of the ratios, got "${raw}"`);
        o.policies = POLICIES.filter((p) => names.includes(p));
        break;
      }
      default:
        throw new Error(`unknown option ${flag} (${USAGE})`);
    }
  }
  return o;
}

// ---------------------------------------------------------------- one policy

interface PolicyResult {
  policy: Policy;
  requests: number;
  errors: number;
  firstError: string | undefined;
  seconds: number;
  completionTokens: number;
  hits: number;
  queries: number;
  /** Mean TTFT the engines measured (arrival to first token), ms. */
  engineTtftMs: number;
  ttftMs: Float64Array;
  perReplica: Map<string, number>;
}

const rps = (r: PolicyResult): number => r.requests / r.seconds;
const hitRate = (r: PolicyResult): number => (r.queries > 0 ? r.hits / r.queries : 0);
const meanTtft = (r: PolicyResult): number => r.ttftMs.reduce((a, b) => a + b, 0) / r.ttftMs.length;
const p99Ttft = (r: PolicyResult): number => percentile(r.ttftMs, 99);

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Max per-replica requests over the mean of all replicas (idle ones count as 0). */
function maxLoadRatio(r: PolicyResult, replicas: number): number {
  const counts = [...r.perReplica.values()];
  const mean = counts.reduce((a, b) => a + b, 0) / replicas;
  return mean > 0 ? Math.max(...counts) / mean : NaN;
}

interface EngineCounters {
  hits: number;
  queries: number;
  /** vllm:time_to_first_token_seconds: sum (s) and count. */
  ttftSum: number;
  ttftCount: number;
}

/** The engines' prefix-cache and TTFT counters, summed over replicas. */
async function engineCounters(engines: readonly EngineSimProcess[]): Promise<EngineCounters> {
  const all = await Promise.all(engines.map((e) => scrape(e.endpoint)));
  const sum = (name: string): number => all.reduce((total, samples) => total + sumSeries(samples, name), 0);
  return {
    hits: sum('vllm:prefix_cache_hits_total'),
    queries: sum('vllm:prefix_cache_queries_total'),
    ttftSum: sum('vllm:time_to_first_token_seconds_sum'),
    ttftCount: sum('vllm:time_to_first_token_seconds_count'),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Closed-loop users through `router` for warm-up + duration. A request counts when it ends
 * inside the measured window; the cache counters are read at the window's edges.
 */
async function drive(policy: Policy, router: RouterProcess, engines: readonly EngineSimProcess[], workload: SharedPrefixWorkload, o: Options): Promise<PolicyResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: o.users });
  const base = new URL(router.base);
  const ttfts: number[] = [];
  const perReplica = new Map<string, number>(engines.map((e) => [e.name, 0]));
  let windowStart = Infinity;
  let windowEnd = Infinity;
  let stop = false;
  let requests = 0;
  let errors = 0;
  let firstError: string | undefined;
  let completionTokens = 0;

  const user = async (index: number): Promise<void> => {
    for (const conversation of workload.conversations(index)) {
      const messages: ChatMessage[] = [{ role: 'system', content: workload.systemPrompts[conversation.systemPrompt] }];
      for (const turn of conversation.turns) {
        if (stop) return;
        messages.push({ role: 'user', content: turn.userMessage });
        const answer = await streamChat(agent, base, { model: MODEL, messages, max_tokens: turn.maxTokens, ignore_eos: true });
        const now = performance.now();
        const counted = now >= windowStart && now < windowEnd;
        if (answer.error !== undefined) {
          if (counted) {
            errors++;
            firstError ??= answer.error;
          }
          break; // the history is broken: start the next conversation
        }
        if (counted) {
          requests++;
          ttfts.push(answer.ttftMs);
          completionTokens += answer.completionTokens;
          const replica = answer.replica ?? '(no replica header)';
          perReplica.set(replica, (perReplica.get(replica) ?? 0) + 1);
        }
        messages.push({ role: 'assistant', content: answer.content });
        if (turn.thinkMs > 0) await sleep(turn.thinkMs);
      }
    }
  };

  const users = Array.from({ length: o.users }, (_, i) => user(i));
  await sleep(o.warmupS * 1000);
  const before = await engineCounters(engines);
  windowStart = performance.now();
  await sleep(o.durationS * 1000);
  windowEnd = performance.now();
  const after = await engineCounters(engines);
  stop = true;
  await Promise.all(users);
  agent.destroy();
  return {
    policy,
    requests,
    errors,
    firstError,
    seconds: (windowEnd - windowStart) / 1000,
    completionTokens,
    hits: after.hits - before.hits,
    queries: after.queries - before.queries,
    engineTtftMs: ((after.ttftSum - before.ttftSum) / (after.ttftCount - before.ttftCount)) * 1000,
    ttftMs: Float64Array.from(ttfts).sort(),
    perReplica,
  };
}

// ---------------------------------------------------------------- report

const fixed = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const ratio = (x: number, baseline: number): string => (baseline > 0 && Number.isFinite(x) ? `${(x / baseline).toFixed(2)}×` : 'n/a');

function printResults(results: readonly PolicyResult[], o: Options): void {
  const baseline = results.find((r) => r.policy === 'round_robin')!;
  console.log('');
  console.log('| policy | requests | errors | req/s | output tok/s | hit rate | mean TTFT ms | p99 TTFT ms | engine mean TTFT ms | max load ratio |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of results) {
    console.log(
      `| ${r.policy} | ${r.requests} | ${r.errors} | ${fixed(rps(r), 1)} | ${Math.round(r.completionTokens / r.seconds)} | ${fixed(hitRate(r), 3)} | ` +
        `${fixed(meanTtft(r), 1)} | ${fixed(p99Ttft(r), 1)} | ${fixed(r.engineTtftMs, 1)} | ${fixed(maxLoadRatio(r, o.replicas), 2)} |`,
    );
  }
  console.log('');
  console.log('Ratios to round_robin (same run):');
  console.log('');
  console.log('| policy | throughput | hit rate | mean TTFT | p99 TTFT |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const r of results) {
    console.log(`| ${r.policy} | ${ratio(rps(r), rps(baseline))} | ${ratio(hitRate(r), hitRate(baseline))} | ${ratio(meanTtft(r), meanTtft(baseline))} | ${ratio(p99Ttft(r), p99Ttft(baseline))} |`);
  }
  console.log('');
  for (const r of results) {
    const loads = [...r.perReplica.entries()].map(([name, n]) => `${name} ${n}`).join(', ');
    console.log(`requests per replica, ${r.policy}: ${loads}`);
    if (r.errors > 0) console.log(`first error, ${r.policy}: ${r.firstError}`);
  }

  const cacheAware = results.find((r) => r.policy === 'cache_aware');
  if (cacheAware) {
    const hitX = hitRate(cacheAware) / hitRate(baseline);
    const p99X = p99Ttft(cacheAware) / p99Ttft(baseline);
    const load = maxLoadRatio(cacheAware, o.replicas);
    const goals = [
      [`cache_aware hit rate >= 3× round_robin (${fixed(hitX, 2)}×)`, hitX >= 3],
      [`cache_aware p99 TTFT <= 0.5× round_robin (${fixed(p99X, 2)}×)`, p99X <= 0.5],
      [`cache_aware max load ratio <= 1.5 (${fixed(load, 2)})`, load <= 1.5],
    ] as const;
    console.log('');
    for (const [what, met] of goals) console.log(`goal: ${what}: ${met ? 'met' : 'NOT met'}`);
    console.log(`goal (all three): ${goals.every(([, met]) => met) ? 'met' : 'NOT met'}`);
  }
  console.log('');
  for (const r of results) {
    if (r.policy === 'round_robin') continue;
    console.log(`throughput_ratio_${r.policy}: ${fixed(rps(r) / rps(baseline), 2)}`);
    console.log(`hit_rate_ratio_${r.policy}: ${fixed(hitRate(r) / hitRate(baseline), 2)}`);
    console.log(`p99_ttft_ratio_${r.policy}: ${fixed(p99Ttft(r) / p99Ttft(baseline), 2)}`);
  }
  for (const r of results) {
    console.log(`hit_rate_${r.policy}: ${fixed(hitRate(r), 3)}`);
    console.log(`p99_ttft_ms_${r.policy}: ${fixed(p99Ttft(r), 1)}`);
    console.log(`max_load_ratio_${r.policy}: ${fixed(maxLoadRatio(r, o.replicas), 2)}`);
  }
}

// ---------------------------------------------------------------- main

export async function run(args: string[]): Promise<void> {
  const o = parseOptions(args);
  const workload = new SharedPrefixWorkload({
    seed: o.seed,
    systemPrompts: o.systemPrompts,
    systemPromptTokens: o.systemPromptTokens,
    turns: o.turns,
    userMessageTokens: o.userMessageTokens,
    answerTokens: o.answerTokens,
    thinkMs: o.thinkMs,
  });
  const longestPrompt = o.systemPromptTokens.max + o.turns.max * (o.userMessageTokens.max + o.answerTokens.max + 10);
  if (Math.ceil((longestPrompt + o.answerTokens.max) / BLOCK_SIZE) > o.kvCacheBlocks) {
    throw new Error(`--kv-cache-blocks: ${o.kvCacheBlocks} blocks of ${BLOCK_SIZE} tokens cannot hold the longest conversation (about ${longestPrompt} tokens); raise it or shorten the workload`);
  }
  // The router's prefix memory sized like one replica's prefix cache (docs/router.md).
  const prefixChars = o.prefixChars ?? Math.round(o.kvCacheBlocks * BLOCK_SIZE * workload.charsPerToken);
  const cacheAwareEnv: Record<string, string> = { PREFIX_CHARS_PER_REPLICA: String(prefixChars) };
  if (o.cacheThreshold !== undefined) cacheAwareEnv.CACHE_THRESHOLD = String(o.cacheThreshold);
  if (o.balanceAbs !== undefined) cacheAwareEnv.BALANCE_ABS_THRESHOLD = String(o.balanceAbs);
  if (o.balanceRel !== undefined) cacheAwareEnv.BALANCE_REL_THRESHOLD = String(o.balanceRel);

  const engineFlags = [
    '--block-size', String(BLOCK_SIZE),
    '--kv-cache-blocks', String(o.kvCacheBlocks),
    '--max-num-seqs', String(o.maxNumSeqs),
    '--prefill-us-per-token', String(o.prefillUsPerToken),
    '--itl-ms', String(o.itlMs),
    '--load-slowdown', String(o.loadSlowdown),
    '--latency-jitter', String(o.jitter),
    '--seed', String(o.seed),
  ];
  const promptBlocks = workload.systemPrompts.reduce((sum, p) => sum + Math.floor(countTokens(p) / BLOCK_SIZE), 0);
  console.log(
    `routing quality: ${o.users} closed-loop users (think ${o.thinkMs.min}-${o.thinkMs.max} ms between turns), ${o.systemPrompts} system prompts of ` +
      `${o.systemPromptTokens.min}-${o.systemPromptTokens.max} tokens (${promptBlocks} KV blocks together), conversations of ` +
      `${o.turns.min}-${o.turns.max} turns (user ${o.userMessageTokens.min}-${o.userMessageTokens.max} tokens, answers ` +
      `${o.answerTokens.min}-${o.answerTokens.max}), streamed; seed ${o.seed}`,
  );
  console.log(
    `${o.replicas} engine-sim replicas: ${o.kvCacheBlocks} KV blocks of ${BLOCK_SIZE} tokens each, max-num-seqs ${o.maxNumSeqs}, prefill ` +
      `${o.prefillUsPerToken} µs/uncached token, ITL ${o.itlMs} ms, load slowdown ${o.loadSlowdown}, jitter ${o.jitter}; ` +
      `per policy: fresh engines and router, ${o.warmupS} s warm-up + ${o.durationS} s measured`,
  );
  console.log(`machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'}), Node ${process.version}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')} at start`);
  console.log(`cache_aware router settings: ${Object.entries(cacheAwareEnv).map(([k, v]) => `${k}=${v}`).join(' ')} (others: router defaults)`);

  const fleet = new BenchFleet();
  const cluster = `bench${process.pid}`;
  const results: PolicyResult[] = [];
  let ok = false;
  try {
    const natsUrl = await fleet.startNats();
    // Without Redis the router fails open; keys without limits never touch it on the request path.
    const redisUrl = (await fleet.startRedis()) ?? `redis://127.0.0.1:${await freePort()}`;
    for (const policy of o.policies) {
      const started = performance.now();
      // Ports first, so the deployment is written before anything starts and the router and the
      // engines start side by side.
      const ports = await freePorts(o.replicas);
      await putDeployment(natsUrl, cluster, DEPLOYMENT, MODEL, ports.map(engineEndpoint));
      const routerEnv = { ROUTING_POLICY: policy, ...(policy === 'cache_aware' ? cacheAwareEnv : {}) };
      const [engines, router] = await Promise.all([
        fleet.startEngines(MODEL, engineFlags, ports),
        fleet.startRouter(cluster, natsUrl, redisUrl, MODEL, o.replicas, routerEnv),
      ]);
      const startS = (performance.now() - started) / 1000;
      const result = await drive(policy, router, engines, workload, o);
      results.push(result);
      await router.stop();
      await Promise.all(engines.map((e) => e.stop()));
      console.log(
        `  ${policy}: ${result.requests} requests, ${result.errors} errors, hit rate ${fixed(hitRate(result), 3)}, p99 TTFT ${fixed(p99Ttft(result), 1)} ms ` +
          `(start ${startS.toFixed(1)} s, total ${((performance.now() - started) / 1000).toFixed(1)} s)`,
      );
    }
    ok = true;
  } finally {
    await fleet.stop(ok && !o.keepLogs);
    if (!ok || o.keepLogs) console.log(`logs: ${fleet.logs}`);
  }
  console.log(`load average at the end: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  printResults(results, o);
}

import type { EngineLoadSample } from './engine-load';

type Quantity = 'running' | 'waiting' | 'kv';

/**
 * The series read from an engine's Prometheus text, by engine:
 * - vLLM: `vllm:num_requests_running`, `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`
 *   (older versions: `vllm:gpu_cache_usage_perc`; "perc" notwithstanding, both are 0-1);
 * - SGLang (`--enable-metrics`): `sglang:num_running_reqs`, `sglang:num_queue_reqs`,
 *   `sglang:token_usage` (KV token pool in use, 0-1);
 * - TGI: `tgi_batch_current_size`, `tgi_queue_size` (no KV usage).
 * engine-sim serves vLLM's.
 */
export const ENGINE_LOAD_SERIES: ReadonlyMap<string, Quantity> = new Map<string, Quantity>([
  ['vllm:num_requests_running', 'running'],
  ['vllm:num_requests_waiting', 'waiting'],
  ['vllm:kv_cache_usage_perc', 'kv'],
  ['vllm:gpu_cache_usage_perc', 'kv'],
  ['sglang:num_running_reqs', 'running'],
  ['sglang:num_queue_reqs', 'waiting'],
  ['sglang:token_usage', 'kv'],
  ['tgi_batch_current_size', 'running'],
  ['tgi_queue_size', 'waiting'],
]);

/**
 * Labels of ranks that share one scheduler's requests: SGLang labels its series by `tp_rank`,
 * `pp_rank` and `moe_ep_rank`, and with `--enable-metrics-for-all-schedulers` every rank of a
 * data-parallel group reports the same requests. Series differing only in these count once;
 * series differing in anything else (vLLM's `engine`, SGLang's `dp_rank`) add up.
 */
const SHARED_RANK_LABELS: ReadonlySet<string> = new Set(['tp_rank', 'pp_rank', 'moe_ep_rank']);

const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

interface Sample {
  readonly name: string;
  /** The series' identity less shared rank labels: samples with equal keys report the same requests. */
  readonly key: string;
  readonly value: number;
}

/**
 * An engine's load from its `/metrics` (Prometheus text exposition, or OpenMetrics): requests
 * running and waiting, summed over schedulers, and the fullest KV cache. Undefined when the text
 * holds none of ENGINE_LOAD_SERIES (not an engine the router knows, or metrics disabled).
 * Comments, other series, malformed lines and NaN or infinite values are skipped; a timestamp
 * after the value is ignored.
 */
export function parseEngineMetrics(text: string): EngineLoadSample | undefined {
  const running = new Map<string, number>();
  const waiting = new Map<string, number>();
  let kv: number | undefined;
  let found = false;
  const n = text.length;
  let pos = 0;
  while (pos < n) {
    let end = text.indexOf('\n', pos);
    if (end < 0) end = n;
    const sample = parseLine(text, pos, end);
    pos = end + 1;
    if (sample === undefined) continue;
    const quantity = ENGINE_LOAD_SERIES.get(sample.name);
    if (quantity === 'kv') {
      const usage = Math.min(1, Math.max(0, sample.value));
      kv = kv === undefined ? usage : Math.max(kv, usage);
      found = true;
    } else if (quantity !== undefined && sample.value >= 0) {
      const groups = quantity === 'running' ? running : waiting;
      groups.set(sample.key, Math.max(groups.get(sample.key) ?? 0, sample.value));
      found = true;
    }
  }
  if (!found) return undefined;
  return { running: sum(running), waiting: sum(waiting), kvCacheUsage: kv };
}

function sum(groups: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const value of groups.values()) total += value;
  return total;
}

function isBlank(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d; // space, tab, CR (CRLF line ends)
}

/** One sample line of ENGINE_LOAD_SERIES in text[start, end), or undefined for anything else. */
function parseLine(text: string, start: number, end: number): Sample | undefined {
  let i = start;
  while (i < end && isBlank(text.charCodeAt(i))) i++;
  if (i === end || text.charCodeAt(i) === 0x23) return undefined; // blank, or # HELP / # TYPE / comment
  const nameStart = i;
  while (i < end) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || isBlank(c)) break; // {
    i++;
  }
  const name = text.slice(nameStart, i);
  // Most of /metrics is histograms the router does not read: skip them before parsing labels.
  if (!ENGINE_LOAD_SERIES.has(name)) return undefined;
  let key = name;
  while (i < end && isBlank(text.charCodeAt(i))) i++;
  if (i < end && text.charCodeAt(i) === 0x7b) {
    const labels = parseLabels(text, i + 1, end);
    if (labels === undefined) return undefined;
    i = labels.next;
    key += labels.key;
  }
  while (i < end && isBlank(text.charCodeAt(i))) i++;
  const valueStart = i;
  while (i < end && !isBlank(text.charCodeAt(i))) i++;
  const value = parseValue(text.slice(valueStart, i));
  // What follows (a timestamp, an OpenMetrics exemplar) does not matter.
  return value === undefined ? undefined : { name, key, value };
}

/**
 * The labels after `{` up to the closing `}`, as a canonical key (sorted, shared rank labels
 * left out), and the index after `}`. Values are quoted and may hold spaces, commas, braces and
 * the escapes \\, \" and \n. Undefined when the set is malformed.
 */
function parseLabels(text: string, start: number, end: number): { key: string; next: number } | undefined {
  const pairs: string[] = [];
  let i = start;
  for (;;) {
    while (i < end && (isBlank(text.charCodeAt(i)) || text.charCodeAt(i) === 0x2c)) i++; // blanks, commas
    if (i === end) return undefined;
    if (text.charCodeAt(i) === 0x7d) break; // }
    const nameStart = i;
    while (i < end && text.charCodeAt(i) !== 0x3d && !isBlank(text.charCodeAt(i))) i++; // =
    const label = text.slice(nameStart, i);
    while (i < end && isBlank(text.charCodeAt(i))) i++;
    if (i === end || text.charCodeAt(i) !== 0x3d) return undefined;
    i++;
    while (i < end && isBlank(text.charCodeAt(i))) i++;
    if (i === end || text.charCodeAt(i) !== 0x22) return undefined; // "
    i++;
    const valueStart = i;
    while (i < end && text.charCodeAt(i) !== 0x22) i += text.charCodeAt(i) === 0x5c ? 2 : 1; // \ escapes one character
    if (i >= end) return undefined;
    if (!SHARED_RANK_LABELS.has(label)) pairs.push(`${label}=${text.slice(valueStart, i)}`);
    i++;
  }
  pairs.sort();
  return { key: pairs.length === 0 ? '' : `{${pairs.join('\u0000')}}`, next: i + 1 };
}

/** A sample value, or undefined when it is not a finite number (NaN and ±Inf are no load). */
function parseValue(token: string): number | undefined {
  if (!FLOAT.test(token)) return undefined;
  const value = Number(token);
  return Number.isFinite(value) ? value : undefined;
}

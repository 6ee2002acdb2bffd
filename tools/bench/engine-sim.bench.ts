// `npm run bench -- engine-sim [--duration 10] [--concurrency 64] [--max-tokens 16]`
//
// Throughput and latency of one engine-sim process at zero latency (no prefill, no inter-token
// delay), driven from this process by a bounded number of concurrent keep-alive requests (Node
// http Agent with keepAlive): non-streamed chat completions, then streamed ones (with the usage
// chunk). An engine-sim must never be the bottleneck of a router benchmark.
//
// Baseline in the same run, same machine, same client: a minimal Node http server in its own
// process that reads the request body and answers a fixed JSON body of about the same size as
// a chat completion. The ratio engine-sim / baseline says how much of the machine's HTTP
// capacity the simulator keeps; the client is the same for both, so it cancels out.
import { join } from 'node:path';
import { freePort } from '@gpufleet/process-kit';
import { drive, REPO_ROOT, RESULT_HEADER, row, startProcess, type LoadOptions, type Result } from './support/http-load';

const MODEL = 'bench/sim-model';

interface Options extends LoadOptions {
  maxTokens: number;
}

function parseOptions(args: string[]): Options {
  const options: Options = { durationS: 10, warmupS: 2, concurrency: 64, maxTokens: 16 };
  for (let i = 0; i < args.length; i++) {
    const value = Number(args[i + 1]);
    switch (args[i]) {
      case '--duration':
        options.durationS = value;
        break;
      case '--warmup':
        options.warmupS = value;
        break;
      case '--concurrency':
        options.concurrency = value;
        break;
      case '--max-tokens':
        options.maxTokens = value;
        break;
      default:
        throw new Error(`unknown option ${args[i]} (expected --duration, --warmup, --concurrency, --max-tokens)`);
    }
    if (!Number.isFinite(value) || value <= 0) throw new Error(`${args[i]}: expected a positive number, got ${args[i + 1]}`);
    i++;
  }
  return options;
}

// ---------------------------------------------------------------- servers

const BASELINE_SERVER = `
const http = require('http');
const body = JSON.stringify({
  id: 'chatcmpl-0123456789abcdef0123456789abcdef', object: 'chat.completion', created: 1700000000, model: '${MODEL}',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Model cache holds the next batch of tokens and keeps the queue warm for each replica.', refusal: null, tool_calls: [] }, logprobs: null, finish_reason: 'length', stop_reason: null }],
  usage: { prompt_tokens: 21, completion_tokens: 16, total_tokens: 37, prompt_tokens_details: { cached_tokens: 16 } }, system_fingerprint: null, prompt_logprobs: null,
});
const server = http.createServer({ keepAliveTimeout: 65000 }, (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(process.argv[1]), '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));
`;

export async function run(args: string[]): Promise<void> {
  const options = parseOptions(args);
  console.log(
    `engine-sim at zero latency: ${options.concurrency} concurrent keep-alive requests from one client process, ` +
      `${options.warmupS} s warm-up + ${options.durationS} s per phase, max_tokens ${options.maxTokens}`,
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
  const isCompletion = (text: string): boolean => text.includes('"chat.completion"');
  const isStream = (text: string): boolean => text.endsWith('data: [DONE]\n\n') && text.includes('"usage":{');

  const baselinePort = await freePort();
  const baseline = await startProcess('baseline http server', process.execPath, ['-e', BASELINE_SERVER, String(baselinePort)], `http://127.0.0.1:${baselinePort}`, '/');
  let baselineResult: Result;
  try {
    baselineResult = await drive('baseline: minimal Node http server, fixed JSON', baseline.base, chat, options, isCompletion);
  } finally {
    await baseline.stop();
  }

  const port = await freePort();
  const engine = await startProcess(
    'engine-sim',
    process.execPath,
    [
      '-r', 'reflect-metadata', '-r', '@swc-node/register', join(REPO_ROOT, 'apps/engine-sim/src/main.ts'),
      '--model', MODEL, '--port', String(port), '--host', '127.0.0.1', '--replica-name', 'bench',
      '--itl-ms', '0', '--prefill-us-per-token', '0', '--max-num-seqs', '1024',
    ],
    `http://127.0.0.1:${port}`,
    '/readyz',
  );
  let plain: Result;
  let streamed: Result;
  try {
    plain = await drive('engine-sim: chat completion, non-streamed', engine.base, chat, options, isCompletion);
    streamed = await drive(
      'engine-sim: chat completion, streamed (SSE, usage chunk)',
      engine.base,
      { ...chat, stream: true, stream_options: { include_usage: true } },
      options,
      isStream,
    );
  } finally {
    await engine.stop();
  }

  console.log('');
  for (const line of RESULT_HEADER) console.log(line);
  for (const r of [baselineResult, plain, streamed]) console.log(row(r));
  console.log('');
  console.log(`ratio engine-sim / baseline (non-streamed): ${(plain.rps / baselineResult.rps).toFixed(2)}`);
  console.log(`ratio engine-sim / baseline (streamed, ${options.maxTokens} chunks + usage): ${(streamed.rps / baselineResult.rps).toFixed(2)}`);
  console.log(`goal: >= 5000 non-streamed requests/s: ${plain.rps >= 5000 ? 'met' : 'NOT met'}`);
  console.log('');
  console.log(`baseline_requests_per_second: ${Math.round(baselineResult.rps)}`);
  console.log(`streamed_requests_per_second: ${Math.round(streamed.rps)}`);
  console.log(`p99_ms: ${plain.p99.toFixed(2)}`);
  console.log(`requests_per_second: ${Math.round(plain.rps)}`);
}

import { parseEngineMetrics } from './parse-engine-metrics';

const MODEL = 'model_name="meta-llama/Llama-3.1-8B-Instruct"';

describe('parseEngineMetrics', () => {
  it('reads vLLM (V1): running and waiting summed over data-parallel engines, the fullest KV cache', () => {
    const text = [
      '# HELP vllm:num_requests_running Number of requests in model execution batches.',
      '# TYPE vllm:num_requests_running gauge',
      `vllm:num_requests_running{engine="0",${MODEL}} 3.0`,
      `vllm:num_requests_running{engine="1",${MODEL}} 2.0`,
      '# HELP vllm:num_requests_waiting Number of requests waiting to be processed.',
      '# TYPE vllm:num_requests_waiting gauge',
      `vllm:num_requests_waiting{engine="0",${MODEL}} 1.0`,
      `vllm:num_requests_waiting{engine="1",${MODEL}} 0.0`,
      '# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.',
      '# TYPE vllm:kv_cache_usage_perc gauge',
      `vllm:kv_cache_usage_perc{engine="0",${MODEL}} 0.42`,
      `vllm:kv_cache_usage_perc{engine="1",${MODEL}} 0.17`,
      '# HELP vllm:request_success_total Count of successfully processed requests.',
      '# TYPE vllm:request_success_total counter',
      `vllm:request_success_total{engine="0",finished_reason="stop",${MODEL}} 1234.0`,
      '# TYPE vllm:e2e_request_latency_seconds histogram',
      `vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",${MODEL}} 17.0`,
      `vllm:e2e_request_latency_seconds_count{engine="0",${MODEL}} 1251.0`,
      'vllm:num_requests_running_max{engine="0"} 99',
      '',
    ].join('\n');
    expect(parseEngineMetrics(text)).toEqual({ running: 5, waiting: 1, kvCacheUsage: 0.42 });
  });

  it('reads vLLM V0’s vllm:gpu_cache_usage_perc', () => {
    const text = [
      `vllm:num_requests_running{${MODEL}} 4.0`,
      `vllm:num_requests_swapped{${MODEL}} 7.0`,
      `vllm:num_requests_waiting{${MODEL}} 2.0`,
      `vllm:gpu_cache_usage_perc{${MODEL}} 0.05`,
      `vllm:cpu_cache_usage_perc{${MODEL}} 0.9`,
    ].join('\n');
    expect(parseEngineMetrics(text)).toEqual({ running: 4, waiting: 2, kvCacheUsage: 0.05 });
  });

  it('reads SGLang, counting the ranks of one scheduler once and adding data-parallel ranks', () => {
    const labels = (dp: number, tp: number) => `{dp_rank="${dp}",engine_type="unified",${MODEL},moe_ep_rank="0",pp_rank="0",tp_rank="${tp}"}`;
    const text = [
      '# HELP sglang:num_running_reqs The number of running requests.',
      '# TYPE sglang:num_running_reqs gauge',
      // --enable-metrics-for-all-schedulers: both tensor-parallel ranks of each DP group report.
      `sglang:num_running_reqs${labels(0, 0)} 12.0`,
      `sglang:num_running_reqs${labels(0, 1)} 12.0`,
      `sglang:num_running_reqs${labels(1, 2)} 7.0`,
      `sglang:num_running_reqs${labels(1, 3)} 7.0`,
      '# HELP sglang:num_queue_reqs The number of requests in the waiting queue.',
      '# TYPE sglang:num_queue_reqs gauge',
      `sglang:num_queue_reqs${labels(0, 0)} 3.0`,
      `sglang:num_queue_reqs${labels(1, 2)} 0.0`,
      '# HELP sglang:token_usage The token usage.',
      '# TYPE sglang:token_usage gauge',
      `sglang:token_usage${labels(0, 0)} 0.28`,
      `sglang:token_usage${labels(1, 2)} 0.61`,
      `sglang:cache_hit_rate${labels(0, 0)} 0.0075`,
      `sglang:prompt_tokens_total${labels(0, 0)} 8.128902e+06`,
    ].join('\n');
    expect(parseEngineMetrics(text)).toEqual({ running: 19, waiting: 3, kvCacheUsage: 0.61 });
  });

  it('reads TGI, which reports no KV cache usage', () => {
    const text = '# TYPE tgi_queue_size gauge\ntgi_queue_size 4\n# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size 8\ntgi_request_count 100\n';
    expect(parseEngineMetrics(text)).toEqual({ running: 8, waiting: 4, kvCacheUsage: undefined });
  });

  it('survives label values with spaces, commas, braces and escapes, timestamps, exponents, CRLF and indentation', () => {
    const text = [
      'vllm:num_requests_running{model_name="my \\"model\\", v2 {x} y=1",engine="0"} 1.2e+01 1712345678000',
      '  vllm:num_requests_running{engine="1",model_name="a\\\\"} 3 ',
      'vllm:num_requests_waiting { engine = "0" , model_name="x\\ny" , } 2.5E0',
      'vllm:kv_cache_usage_perc{engine="0"} 9.5e-1\r',
    ].join('\r\n');
    expect(parseEngineMetrics(text)).toEqual({ running: 15, waiting: 2.5, kvCacheUsage: 0.95 });
  });

  it('skips NaN, infinite, negative and malformed samples, and clamps KV usage to 0-1', () => {
    const text = [
      'vllm:num_requests_running{engine="0"} NaN',
      'vllm:num_requests_running{engine="1"} +Inf',
      'vllm:num_requests_running{engine="2"} -1',
      'vllm:num_requests_running{engine="3"} 0x10',
      'vllm:num_requests_running{engine="4} 5',
      'vllm:num_requests_running{engine="5"',
      'vllm:num_requests_running{engine="6"} ',
      'vllm:num_requests_running{engine="7"} 2',
      'vllm:kv_cache_usage_perc{engine="0"} 1.7',
    ].join('\n');
    expect(parseEngineMetrics(text)).toEqual({ running: 2, waiting: 0, kvCacheUsage: 1 });
  });

  it('answers undefined when none of the load series is there', () => {
    expect(parseEngineMetrics('')).toBeUndefined();
    expect(parseEngineMetrics('# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n')).toBeUndefined();
    expect(parseEngineMetrics('process_cpu_seconds_total 12.5\nhttp_requests_total{code="200"} 3\n')).toBeUndefined();
    expect(parseEngineMetrics('vllm:num_requests_running{engine="0"} NaN\n')).toBeUndefined();
    expect(parseEngineMetrics('<html><body>404 Not Found</body></html>')).toBeUndefined();
  });

  it('counts a series with only some of the quantities as zero for the others', () => {
    expect(parseEngineMetrics('vllm:kv_cache_usage_perc{engine="0"} 0.3\n')).toEqual({ running: 0, waiting: 0, kvCacheUsage: 0.3 });
  });
});

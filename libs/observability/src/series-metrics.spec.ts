import { createCounter, createHistogram, createMetricsRegistry } from './metrics';
import { createSeriesCounter, createSeriesHistogram } from './series-metrics';

const BUCKETS = [0.005, 0.01, 0.1, 1, 10];

/**
 * The samples of one metric family in a registry's text, each as `name{labels sorted} value`
 * (Prometheus gives label order no meaning; prom-client and these metrics order them differently).
 */
async function family(text: Promise<string>, name: string): Promise<string[]> {
  return (await text)
    .split('\n')
    .filter((line) => line.startsWith(name))
    .map((line) => {
      const match = /^([a-z_]+)\{(.*)\} (.*)$/.exec(line);
      if (!match) return line;
      return `${match[1]}{${match[2].split(',').sort().join(',')}} ${match[3]}`;
    })
    .sort();
}

describe('series metrics', () => {
  it('read on /metrics exactly as prom-client histograms and counters do', async () => {
    const ours = createMetricsRegistry({ service: 'router', labels: { cluster: 'dev' }, defaultMetrics: false });
    const theirs = createMetricsRegistry({ service: 'router', labels: { cluster: 'dev' }, defaultMetrics: false });
    const hist = createSeriesHistogram(ours, { name: 'request_seconds', help: 'x', labelNames: ['api', 'model'], buckets: BUCKETS });
    const ref = createHistogram(theirs, { name: 'request_seconds', help: 'x', labelNames: ['api', 'model'], buckets: BUCKETS });
    const counter = createSeriesCounter(ours, { name: 'requests_total', help: 'y', labelNames: ['code'] });
    const refCounter = createCounter(theirs, { name: 'requests_total', help: 'y', labelNames: ['code'] });
    const values = [0, 0.005, 0.0051, 0.2, 1, 9.99, 10, 11, 500];
    for (const [i, value] of values.entries()) {
      const labels = { api: i % 2 ? 'chat' : 'completions', model: 'm' };
      hist.series(labels).observe(value);
      ref.observe(labels, value);
      counter.series({ code: i % 3 ? '200' : '429' }).inc();
      refCounter.inc({ code: i % 3 ? '200' : '429' });
    }
    counter.series({ code: '200' }).inc(5);
    refCounter.inc({ code: '200' }, 5);
    expect(await family(ours.metrics(), 'gpufleet_request_seconds')).toEqual(await family(theirs.metrics(), 'gpufleet_request_seconds'));
    expect(await family(ours.metrics(), 'gpufleet_requests_total')).toEqual(await family(theirs.metrics(), 'gpufleet_requests_total'));
    expect(await ours.metrics()).toContain('gpufleet_request_seconds_bucket{api="chat",model="m",le="+Inf",cluster="dev",service="router"} 4');
  });

  it('hands out one series per label set, and the registered metric on a second create', () => {
    const registry = createMetricsRegistry({ service: 's', defaultMetrics: false });
    const counter = createSeriesCounter(registry, { name: 'hits_total', help: 'x', labelNames: ['a', 'b'] });
    expect(counter.series({ a: '1', b: '2' })).toBe(counter.series({ a: '1', b: '2' }));
    expect(counter.series({ a: '1', b: '2' })).not.toBe(counter.series({ a: '12', b: '' }));
    expect(createSeriesCounter(registry, { name: 'hits_total', help: 'x', labelNames: ['a', 'b'] })).toBe(counter);
    expect(() => createSeriesHistogram(registry, { name: 'hits_total', help: 'x', labelNames: [], buckets: [1] })).toThrow(/another type/);
    expect(() => createSeriesCounter(registry, { name: 'hits', help: 'x', labelNames: [] })).toThrow(/_total/);
    expect(() => createSeriesHistogram(registry, { name: 'h_seconds', help: 'x', labelNames: [], buckets: [1, 1] })).toThrow(/increase/);
  });

  it('zeroes its series on a registry reset, and series kept by callers go on counting', async () => {
    const registry = createMetricsRegistry({ service: 's', defaultMetrics: false });
    const kept = createSeriesCounter(registry, { name: 'hits_total', help: 'x', labelNames: ['a'] }).series({ a: '1' });
    const histogram = createSeriesHistogram(registry, { name: 'h_seconds', help: 'x', labelNames: [], buckets: [1] }).series({});
    kept.inc(3);
    histogram.observe(0.5);
    registry.resetMetrics();
    kept.inc();
    const text = await registry.metrics();
    expect(text).toContain('gpufleet_hits_total{a="1",service="s"} 1');
    expect(text).toContain('gpufleet_h_seconds_count{service="s"} 0');
  });
});

import { createCounter, createGauge, createHistogram, createMetricsRegistry, metricName } from './metrics';

describe('metrics', () => {
  it('prefixes names with gpufleet_ once', () => {
    expect(metricName('placements_total')).toBe('gpufleet_placements_total');
    expect(metricName('gpufleet_placements_total')).toBe('gpufleet_placements_total');
    expect(() => metricName('Bad-Name')).toThrow(/snake_case/);
  });

  it('labels every series with the service and includes Node default metrics', async () => {
    const registry = createMetricsRegistry({ service: 'scheduler', labels: { cluster: 'dev' } });
    createCounter(registry, { name: 'placements_total', help: 'Placements.', labelNames: ['result'] }).inc({ result: 'ok' });
    const text = await registry.metrics();
    expect(text).toContain('gpufleet_placements_total{result="ok",cluster="dev",service="scheduler"} 1');
    expect(text).toMatch(/^process_cpu_user_seconds_total\{/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds\{/m);
  });

  it('leaves default metrics out on request', async () => {
    const registry = createMetricsRegistry({ service: 's', defaultMetrics: false });
    expect(await registry.metrics()).toBe('\n');
  });

  it('requires counters to end in _total', () => {
    const registry = createMetricsRegistry({ service: 's', defaultMetrics: false });
    expect(() => createCounter(registry, { name: 'placements', help: 'x' })).toThrow('counter "gpufleet_placements" must end in _total');
  });

  it('returns the registered metric when created twice, and refuses a type clash', () => {
    const registry = createMetricsRegistry({ service: 's', defaultMetrics: false });
    const first = createGauge(registry, { name: 'free_devices', help: 'Free devices.', labelNames: ['pool'] });
    expect(createGauge(registry, { name: 'free_devices', help: 'Free devices.', labelNames: ['pool'] })).toBe(first);
    expect(() => createHistogram(registry, { name: 'free_devices', help: 'x' })).toThrow(/already registered as another type/);
  });

  it('records histograms in the given buckets', async () => {
    const registry = createMetricsRegistry({ service: 's', defaultMetrics: false });
    createHistogram(registry, { name: 'placement_seconds', help: 'x', buckets: [0.1, 1] }).observe(0.5);
    const text = await registry.metrics();
    expect(text).toContain('gpufleet_placement_seconds_bucket{le="0.1",service="s"} 0');
    expect(text).toContain('gpufleet_placement_seconds_bucket{le="1",service="s"} 1');
  });
});

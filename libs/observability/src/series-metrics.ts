/**
 * Counters and histograms for request hot paths. prom-client validates and hashes the label set
 * on every `inc`/`observe` (about a microsecond each, several times per request in the inference
 * router); here the caller looks a series up once (`series(labels)`) and then only adds to plain
 * numbers. The metrics register into a prom-client Registry like any other and read the same on
 * `/metrics` (default labels, `_bucket`/`_sum`/`_count`, cumulative buckets, `le="+Inf"`).
 */
import type { Metric, Registry } from 'prom-client';
import { metricName } from './metrics';

type Labels<L extends string> = Readonly<Record<L, string>>;

interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

interface MetricSnapshot {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: MetricValue[];
}

export interface SeriesMetricOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
}

/** One labelled series of a SeriesCounter. */
export class CounterSeries {
  value = 0;

  constructor(readonly labels: Readonly<Record<string, string>>) {}

  inc(by = 1): void {
    this.value += by;
  }
}

/** One labelled series of a SeriesHistogram. */
export class HistogramSeries {
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]) i++;
    this.counts[i]++;
    this.sum += value;
    this.count++;
  }
}

abstract class SeriesMetric<L extends string, S extends { labels: Readonly<Record<string, string>> }> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum' as const;
  private readonly labelNames: readonly L[];
  private readonly bySeries = new Map<string, S>();

  protected constructor(registry: Registry, options: SeriesMetricOptions<L>) {
    this.name = metricName(options.name);
    this.help = options.help;
    this.labelNames = options.labelNames;
    // The Registry only calls name, get() and reset() (the Metric interface's duck type).
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series for `labels`; keep it and update it directly on hot paths. */
  series(labels: Labels<L>): S {
    let id = '';
    for (const name of this.labelNames) id += `${labels[name]}\u0000`;
    let series = this.bySeries.get(id);
    if (series === undefined) {
      const copy: Record<string, string> = {};
      for (const name of this.labelNames) {
        const value = labels[name];
        if (typeof value !== 'string') throw new Error(`metric "${this.name}": label "${name}" needs a string value`);
        copy[name] = value;
      }
      series = this.create(copy);
      this.bySeries.set(id, series);
    }
    return series;
  }

  /**
   * Zeroes every series (`Registry.resetMetrics`). The series stay, unlike prom-client's, so
   * that references callers keep from `series()` go on counting.
   */
  reset(): void {
    for (const series of this.bySeries.values()) this.zero(series);
  }

  protected get all(): IterableIterator<S> {
    return this.bySeries.values();
  }

  protected abstract create(labels: Record<string, string>): S;

  protected abstract zero(series: S): void;
}

/** A counter (name ends in `_total`) whose series are looked up once. */
export class SeriesCounter<L extends string> extends SeriesMetric<L, CounterSeries> {
  readonly type = 'counter' as const;

  constructor(registry: Registry, options: SeriesMetricOptions<L>) {
    super(registry, options);
    if (!this.name.endsWith('_total')) throw new Error(`counter "${this.name}" must end in _total`);
  }

  async get(): Promise<MetricSnapshot> {
    const values: MetricValue[] = [];
    for (const s of this.all) values.push({ value: s.value, labels: { ...s.labels } });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  protected create(labels: Record<string, string>): CounterSeries {
    return new CounterSeries(labels);
  }

  protected zero(series: CounterSeries): void {
    series.value = 0;
  }
}

/** A histogram (put the unit in the name) whose series are looked up once. */
export class SeriesHistogram<L extends string> extends SeriesMetric<L, HistogramSeries> {
  readonly type = 'histogram' as const;
  private readonly bounds: readonly number[];

  constructor(registry: Registry, options: SeriesMetricOptions<L> & { readonly buckets: readonly number[] }) {
    super(registry, options);
    const bounds = [...options.buckets];
    for (let i = 1; i < bounds.length; i++) {
      if (!(bounds[i] > bounds[i - 1])) throw new Error(`histogram "${this.name}": buckets must increase`);
    }
    this.bounds = bounds;
  }

  async get(): Promise<MetricSnapshot> {
    const values: MetricValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.all) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts[i];
        values.push({ value: cumulative, labels: { ...s.labels, le: this.bounds[i] }, metricName: bucket });
      }
      values.push({ value: s.count, labels: { ...s.labels, le: '+Inf' }, metricName: bucket });
      values.push({ value: s.sum, labels: { ...s.labels }, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels: { ...s.labels }, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  protected create(labels: Record<string, string>): HistogramSeries {
    return new HistogramSeries(labels, this.bounds);
  }

  protected zero(series: HistogramSeries): void {
    series.counts.fill(0);
    series.sum = 0;
    series.count = 0;
  }
}

// Returning the registered metric on a second call keeps services that build their metrics
// more than once per registry (tests) working, as createCounter does.
function existing<M>(registry: Registry, name: string, kind: abstract new (...args: never[]) => M): M | undefined {
  const found: unknown = registry.getSingleMetric(metricName(name));
  if (found === undefined) return undefined;
  if (found instanceof kind) return found;
  throw new Error(`metric "${metricName(name)}" is already registered as another type`);
}

/** A SeriesCounter named `gpufleet_<name>` (ending in `_total`). */
export function createSeriesCounter<L extends string>(registry: Registry, options: SeriesMetricOptions<L>): SeriesCounter<L> {
  return (existing(registry, options.name, SeriesCounter) as SeriesCounter<L> | undefined) ?? new SeriesCounter<L>(registry, options);
}

/** A SeriesHistogram named `gpufleet_<name>`. */
export function createSeriesHistogram<L extends string>(
  registry: Registry,
  options: SeriesMetricOptions<L> & { readonly buckets: readonly number[] },
): SeriesHistogram<L> {
  return (existing(registry, options.name, SeriesHistogram) as SeriesHistogram<L> | undefined) ?? new SeriesHistogram<L>(registry, options);
}

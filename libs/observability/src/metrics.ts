import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

export { Counter, Gauge, Histogram, Registry };

/** Every gpufleet metric name starts with this; Node's default metrics keep their usual names. */
export const METRIC_PREFIX = 'gpufleet_';

export interface MetricsRegistryOptions {
  /** The `service` label on every series. */
  readonly service: string;
  /** More labels on every series, e.g. `{ cluster: 'dev' }`. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Node process metrics (`process_*`, `nodejs_*`), default true. */
  readonly defaultMetrics?: boolean;
}

/** A registry for one service; serve it on `/metrics` (ObservabilityModule does). */
export function createMetricsRegistry(options: MetricsRegistryOptions): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ ...options.labels, service: options.service });
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  return registry;
}

const METRIC_NAME = /^[a-z_][a-z0-9_]*$/;

/** `placements_total` → `gpufleet_placements_total`; a name already prefixed is kept. */
export function metricName(name: string): string {
  const full = name.startsWith(METRIC_PREFIX) ? name : `${METRIC_PREFIX}${name}`;
  if (!METRIC_NAME.test(full)) throw new Error(`metric name "${full}" must be snake_case ([a-z0-9_])`);
  return full;
}

/** What the metric helpers take: prom-client's configuration less `name`-prefixing and `registers`. */
type MetricOptions<C> = Omit<C, 'registers'> & { readonly name: string };

type MetricClass<M> = abstract new (...args: never[]) => M;

// Returning the registered metric on a second call keeps providers that are instantiated
// more than once (tests, several modules) from failing on prom-client's duplicate check.
function registered<M>(registry: Registry, name: string, kind: MetricClass<M>): M | undefined {
  const existing = registry.getSingleMetric(name);
  if (existing === undefined) return undefined;
  if (existing instanceof kind) return existing;
  throw new Error(`metric "${name}" is already registered as another type`);
}

/** A counter named `gpufleet_<name>`; the name must end in `_total`. */
export function createCounter<T extends string = string>(
  registry: Registry,
  options: MetricOptions<CounterConfiguration<T>>,
): Counter<T> {
  const name = metricName(options.name);
  if (!name.endsWith('_total')) throw new Error(`counter "${name}" must end in _total`);
  return registered(registry, name, Counter<T>) ?? new Counter<T>({ ...options, name, registers: [registry] });
}

/** A gauge named `gpufleet_<name>`. */
export function createGauge<T extends string = string>(
  registry: Registry,
  options: MetricOptions<GaugeConfiguration<T>>,
): Gauge<T> {
  const name = metricName(options.name);
  return registered(registry, name, Gauge<T>) ?? new Gauge<T>({ ...options, name, registers: [registry] });
}

/** A histogram named `gpufleet_<name>`; put the unit in the name (`_seconds`, `_bytes`). */
export function createHistogram<T extends string = string>(
  registry: Registry,
  options: MetricOptions<HistogramConfiguration<T>>,
): Histogram<T> {
  const name = metricName(options.name);
  return registered(registry, name, Histogram<T>) ?? new Histogram<T>({ ...options, name, registers: [registry] });
}

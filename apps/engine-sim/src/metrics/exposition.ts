/**
 * Minimal Prometheus series for the engine's hot path. prom-client's histograms cost about a
 * microsecond per observation and cannot take a weighted one; a non-streamed request observes
 * its inter-token latency once per token, so at thousands of requests a second that showed in
 * profiles. These keep plain numbers and render the text exposition format on scrape.
 */

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** `{a="x",b="y"}` for a fixed label set ('' when empty). */
export function labelText(labels: Readonly<Record<string, string>>): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length > 0 ? `{${parts.join(',')}}` : '';
}

function header(name: string, help: string, type: string): string {
  return `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`;
}

export interface Series {
  render(): string;
}

/** A counter family whose series are created up front with fixed labels. */
export class CounterFamily implements Series {
  private readonly series: { labels: string; value: number }[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  /** A series of this family; keep it and call `inc`. */
  child(labels: Readonly<Record<string, string>>): { inc(by?: number): void; readonly value: number } {
    const entry = { labels: labelText(labels), value: 0 };
    this.series.push(entry);
    return {
      inc(by = 1) {
        entry.value += by;
      },
      get value() {
        return entry.value;
      },
    };
  }

  render(): string {
    let out = header(this.name, this.help, 'counter');
    for (const s of this.series) out += `${this.name}${s.labels} ${s.value}\n`;
    return out;
  }
}

/** A gauge read when scraped. */
export class GaugeFamily implements Series {
  private readonly series: { labels: string; read: () => number }[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  child(labels: Readonly<Record<string, string>>, read: () => number): this {
    this.series.push({ labels: labelText(labels), read });
    return this;
  }

  render(): string {
    let out = header(this.name, this.help, 'gauge');
    for (const s of this.series) out += `${this.name}${s.labels} ${s.read()}\n`;
    return out;
  }
}

/** One histogram series with fixed labels; `observe(value, count)` records `count` equal values. */
export class HistogramSeries implements Series {
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;
  private readonly labels: string;
  private readonly labelPrefix: string;

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(buckets.length);
    this.labels = labelText(labels);
    this.labelPrefix = this.labels ? `${this.labels.slice(1, -1)},` : '';
  }

  observe(value: number, count = 1): void {
    const buckets = this.buckets;
    let i = 0;
    while (i < buckets.length && value > buckets[i]) i++;
    if (i < buckets.length) this.counts[i] += count;
    this.sum += value * count;
    this.count += count;
  }

  get observations(): number {
    return this.count;
  }

  render(): string {
    let out = header(this.name, this.help, 'histogram');
    let cumulative = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      cumulative += this.counts[i];
      out += `${this.name}_bucket{${this.labelPrefix}le="${this.buckets[i]}"} ${cumulative}\n`;
    }
    out += `${this.name}_bucket{${this.labelPrefix}le="+Inf"} ${this.count}\n`;
    out += `${this.name}_sum${this.labels} ${this.sum}\n`;
    out += `${this.name}_count${this.labels} ${this.count}\n`;
    return out;
  }
}

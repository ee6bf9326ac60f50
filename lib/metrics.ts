/**
 * A small Prometheus registry: counters, gauges and histograms with bounded label sets,
 * rendered in the text exposition format (version 0.0.4) on each role's admin port.
 * Label values must come from bounded vocabularies (operation, outcome, error code, reason):
 * never a URL, host, HTML or key.
 */
type Labels = Record<string, string>;

/** A label value with a character the exposition format escapes. */
const ESCAPED = /[\\"\n]/;

/** The labels as the exposition format writes them, names in order; built on every inc and observe, so a value is escaped only when it needs it. */
function labelKey(labels: Labels): string {
  const names = Object.keys(labels);
  if (names.length > 1) names.sort();
  let key = '';
  for (const k of names) {
    const v = String(labels[k]);
    const text = ESCAPED.test(v) ? v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : v;
    key += `${key === '' ? '' : ','}${k}="${text}"`;
  }
  return key;
}

function series(name: string, key: string, value: number): string {
  return `${name}${key === '' ? '' : `{${key}}`} ${Number.isFinite(value) ? value : value > 0 ? '+Inf' : '-Inf'}`;
}

interface Metric {
  render(): string[];
}

export class Counter implements Metric {
  private readonly values = new Map<string, number>();
  constructor(readonly name: string, readonly help: string) {}
  inc(labels: Labels = {}, by = 1): void {
    const k = labelKey(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  get(labels: Labels = {}): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }
  render(): string[] {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`,
      ...[...this.values].map(([k, v]) => series(this.name, k, v))];
  }
}

export class Gauge implements Metric {
  private readonly values = new Map<string, number>();
  private readonly collectors: Array<() => void> = [];
  constructor(readonly name: string, readonly help: string) {}
  set(value: number, labels: Labels = {}): void {
    this.values.set(labelKey(labels), value);
  }
  /** Reads a live value at scrape time. */
  collect(fn: () => void): this {
    this.collectors.push(fn);
    return this;
  }
  render(): string[] {
    for (const fn of this.collectors) fn();
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`,
      ...[...this.values].map(([k, v]) => series(this.name, k, v))];
  }
}

/** Default latency buckets in seconds. */
export const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class Histogram implements Metric {
  private readonly values = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(readonly name: string, readonly help: string, readonly buckets: readonly number[] = LATENCY_BUCKETS) {}
  observe(value: number, labels: Labels = {}): void {
    const k = labelKey(labels);
    let v = this.values.get(k);
    if (v === undefined) {
      v = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.values.set(k, v);
    }
    this.buckets.forEach((b, i) => {
      if (value <= b) v.counts[i]! += 1;
    });
    v.sum += value;
    v.count += 1;
  }
  render(): string[] {
    const out = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [k, v] of this.values) {
      const sep = k === '' ? '' : `${k},`;
      this.buckets.forEach((b, i) => out.push(`${this.name}_bucket{${sep}le="${b}"} ${v.counts[i]}`));
      out.push(`${this.name}_bucket{${sep}le="+Inf"} ${v.count}`);
      out.push(series(`${this.name}_sum`, k, v.sum), series(`${this.name}_count`, k, v.count));
    }
    return out;
  }
}

/** A set of metrics exposed together on one admin port. */
export class Registry {
  private readonly metrics = new Map<string, Metric>();
  counter(name: string, help: string): Counter {
    return this.add(name, () => new Counter(name, help));
  }
  gauge(name: string, help: string): Gauge {
    return this.add(name, () => new Gauge(name, help));
  }
  histogram(name: string, help: string, buckets?: readonly number[]): Histogram {
    return this.add(name, () => new Histogram(name, help, buckets));
  }
  /** The text exposition of every metric. */
  render(): string {
    return [...this.metrics.values()].flatMap((m) => m.render()).join('\n') + '\n';
  }
  private add<M extends Metric>(name: string, make: () => M): M {
    const existing = this.metrics.get(name);
    if (existing !== undefined) return existing as M;
    const m = make();
    this.metrics.set(name, m);
    return m;
  }
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

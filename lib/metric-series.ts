// Counters and histograms for the paths every request takes. prom-client's
// own validate, copy and hash their labels on each inc() or observe(), even
// through a child: a few microseconds a request. These keep one plain
// series per label set, made once, whose updates are additions, and render
// as prom-client's metrics do: they register in a prom-client registry
// (its `registerMetric` takes any object with a name and get()), so that
// the registry's text, the cluster's aggregation and removal by name treat
// them as any other metric.
import type { Metric, MetricValueWithName, Registry, RegistryContentType } from 'prom-client'

/** A prom-client registry of either format (Prometheus text or OpenMetrics). */
export type AnyRegistry = Registry<RegistryContentType>

type LabelValues = Record<string, string | number>
type Values = Array<MetricValueWithName<string>>

interface Series {
  labels: LabelValues
}

abstract class LabelledMetric<S extends Series> {
  readonly name: string
  readonly help: string
  abstract readonly type: 'counter' | 'histogram'
  // Workers' values are added up (the cluster registry reads this).
  readonly aggregator = 'sum'
  readonly #series = new Map<string, S>()

  constructor ({ name, help, registers }: { name: string, help: string, registers: AnyRegistry[] }) {
    this.name = name
    this.help = help
    for (const registry of registers) registry.registerMetric(this as unknown as Metric)
  }

  protected abstract create (labels: LabelValues): S
  protected abstract render (series: S, values: Values): void
  protected abstract zero (series: S): void

  /** The series of one label set, by a key the caller makes unique to it. */
  series (key: string, labels: LabelValues): S {
    let series = this.#series.get(key)
    if (series === undefined) {
      series = this.create(labels)
      this.#series.set(key, series)
    }
    return series
  }

  async get (): Promise<{ name: string, help: string, type: string, aggregator: string, values: Values }> {
    const values: Values = []
    for (const series of this.#series.values()) this.render(series, values)
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  // (In place: callers keep their series, as prom-client's children survive a reset.)
  reset (): void {
    for (const series of this.#series.values()) this.zero(series)
  }
}

export interface CounterSeries extends Series {
  value: number
}

/** A counter with labels: `series(key, labels).value++`. */
export class LabelledCounter extends LabelledMetric<CounterSeries> {
  readonly type = 'counter'

  protected create (labels: LabelValues): CounterSeries {
    return { labels, value: 0 }
  }

  protected render ({ labels, value }: CounterSeries, values: Values): void {
    values.push({ labels, value, metricName: this.name })
  }

  protected zero (series: CounterSeries): void {
    series.value = 0
  }
}

/** One label set's buckets: observe() finds the bucket and adds. */
export class HistogramSeries implements Series {
  readonly labels: LabelValues
  readonly bounds: readonly number[]
  // counts[i]: observations in (bounds[i-1], bounds[i]]; the last, past every bound.
  readonly counts: Float64Array
  sum = 0
  count = 0

  constructor (labels: LabelValues, bounds: readonly number[]) {
    this.labels = labels
    this.bounds = bounds
    this.counts = new Float64Array(bounds.length + 1)
  }

  observe (value: number): void {
    const bounds = this.bounds
    let i = 0
    while (i < bounds.length && value > bounds[i]!) i++
    this.counts[i]!++
    this.sum += value
    this.count++
  }
}

/** A histogram with labels (or none: the key '' and no labels). */
export class LabelledHistogram extends LabelledMetric<HistogramSeries> {
  readonly type = 'histogram'
  readonly #bounds: readonly number[]

  constructor (options: { name: string, help: string, buckets: readonly number[], registers: AnyRegistry[] }) {
    super(options)
    this.#bounds = options.buckets
  }

  protected create (labels: LabelValues): HistogramSeries {
    return new HistogramSeries(labels, this.#bounds)
  }

  protected zero (series: HistogramSeries): void {
    series.counts.fill(0)
    series.sum = 0
    series.count = 0
  }

  // As prom-client renders its histograms: cumulative buckets, +Inf, sum, count.
  protected render (series: HistogramSeries, values: Values): void {
    const bucket = `${this.name}_bucket`
    let cumulative = 0
    series.bounds.forEach((bound, i) => {
      cumulative += series.counts[i]!
      values.push({ labels: { le: bound, ...series.labels }, value: cumulative, metricName: bucket })
    })
    values.push({ labels: { le: '+Inf', ...series.labels }, value: series.count, metricName: bucket })
    values.push({ labels: series.labels, value: series.sum, metricName: `${this.name}_sum` })
    values.push({ labels: series.labels, value: series.count, metricName: `${this.name}_count` })
  }
}

// One sample's value in a Prometheus scrape: one reading for the bench's
// group-commit table and for the tests that read /metrics.

/** The value of one sample (`name` or `name{labels}` as written), or undefined when the scrape has none. */
export function metricSample (text: string, series: string): number | undefined {
  const line = text.split('\n').find((row) => row.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

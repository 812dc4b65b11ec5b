// Cost checks compare two pieces of work with each other in one process,
// in CPU time, interleaved, by the median of their ratios: never a time
// against a threshold (speed lives in `npm run bench`).

/** The CPU time (user and system, µs) that `work` took. */
export async function cpuTime (work: () => unknown): Promise<number> {
  const start = process.cpuUsage()
  await work()
  const { user, system } = process.cpuUsage(start)
  return user + system
}

export function median (values: number[]): number {
  return values.toSorted((x, y) => x - y)[Math.floor(values.length / 2)]!
}

/** The median over `rounds` of b's cost / a's, the two taken in turn first. */
export async function medianRatio (rounds: number, a: () => Promise<number>, b: () => Promise<number>): Promise<number> {
  const ratios: number[] = []
  for (let round = 0; round < rounds; round++) {
    if (round % 2 === 0) {
      const first = await a()
      ratios.push(await b() / first)
    } else {
      const second = await b()
      ratios.push(second / await a())
    }
  }
  return median(ratios)
}

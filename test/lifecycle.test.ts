// The process's own view of its load: busy is requests arriving while the
// event loop has no time to spare (webhook deliveries yield then).
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { Lifecycle, delayPast } from '../lib/lifecycle.ts'
import type { OverloadLimits } from '../lib/lifecycle.ts'

// Keeps the event loop working for `ms`, a request arriving every millisecond.
function work (lifecycle: Lifecycle | undefined, ms: number): void {
  const end = performance.now() + ms
  let next = performance.now()
  while (performance.now() < end) {
    if (lifecycle !== undefined && performance.now() >= next) {
      lifecycle.requestArrived()
      next += 1
    }
  }
}

t.test('busy: requests arrive and the event loop has no time to spare', async (t) => {
  // (The event loop's utilization is measured once the loop runs.)
  await sleep(10)
  const lifecycle = new Lifecycle(false)
  t.equal(lifecycle.busy, false, 'at first')
  work(lifecycle, 150)
  t.equal(lifecycle.busy, true, 'requests keep the loop working')
  t.equal(lifecycle.busy, true, 'read again within the window: the same answer')
  await sleep(150)
  t.equal(lifecycle.busy, false, 'the loop waited for work: not busy')
  work(undefined, 150)
  t.equal(lifecycle.busy, false, 'working with no request arriving (its own background work): not busy')
  lifecycle.requestArrived()
  await sleep(150)
  t.equal(lifecycle.busy, false, 'a request now and then: not busy')
})

// A Lifecycle watching for overload, stopped when the test ends.
function started (t: Test, limits: OverloadLimits): Lifecycle {
  const lifecycle = new Lifecycle(limits)
  lifecycle.start()
  t.teardown(() => lifecycle.stop())
  return lifecycle
}

// `turns` turns of the event loop in a row, each kept working for `ms`;
// what `overloaded` said after each.
async function longTurns (lifecycle: Lifecycle, ms: number, turns: number): Promise<Set<string | undefined>> {
  const seen = new Set<string | undefined>()
  for (let turn = 0; turn < turns; turn++) {
    work(undefined, ms)
    await new Promise(setImmediate)
    seen.add(lifecycle.overloaded)
  }
  return seen
}

t.test('overload: turns longer than the sample interval are measured, not taken as past every limit', async (t) => {
  // One turn per sample leaves the delay histogram empty (its first fire
  // after a reset records nothing): the turn's length is the delay.
  const lifecycle = started(t, { maxEventLoopDelay: 5000, sampleInterval: 50 })
  t.same([...await longTurns(lifecycle, 120, 10)], [undefined], '120 ms turns, limit 5 s: never overloaded')
})

t.test('overload: turns past the limit are an overload, until the loop turns freely again', async (t) => {
  const lifecycle = started(t, { maxEventLoopDelay: 100, sampleInterval: 50 })
  t.ok((await longTurns(lifecycle, 300, 5)).has('event-loop delay'), '300 ms turns, limit 100 ms: overloaded')
  await sleep(200)
  t.equal(lifecycle.overloaded, undefined, 'free turns again: not overloaded')
})

t.test('overload: a sample with delays recorded reads their mean', async (t) => {
  const lifecycle = started(t, { maxEventLoopDelay: 50, sampleInterval: 500 })
  // Turns of 5 ms, then of 150 ms, several per sample: the histogram
  // records them, and the sample reads their mean, not its own lateness.
  t.same([...await longTurns(lifecycle, 5, 300)], [undefined], '5 ms turns, limit 50 ms: never overloaded')
  t.ok((await longTurns(lifecycle, 150, 10)).has('event-loop delay'), '150 ms turns, limit 50 ms: overloaded')
  await sleep(1200)
  t.equal(lifecycle.overloaded, undefined, 'free turns again: not overloaded')
})

t.test('overload: a turn is measured from the last sample, not from the start', async (t) => {
  const lifecycle = started(t, { maxEventLoopDelay: 300, sampleInterval: 50 })
  // Running longer than the limit, idle, then in turns longer than a
  // sample's interval but well under the limit.
  await sleep(500)
  t.same([...await longTurns(lifecycle, 120, 8)], [undefined], '120 ms turns, limit 300 ms, after 500 ms: never overloaded')
})

// Watches the event-loop histograms' reads: of the max, those past `limit`
// (as the check compares them), and of the mean (a walk over every bucket).
function watchReads (t: Test, limit: number): { maxPast: number, mean: number, max: number } {
  let proto = Object.getPrototypeOf(monitorEventLoopDelay())
  while (proto !== null && !Object.hasOwn(proto, 'mean')) proto = Object.getPrototypeOf(proto)
  const reads = { maxPast: 0, mean: 0, max: 0 }
  const descriptors = Object.getOwnPropertyDescriptors(proto)
  Object.defineProperty(proto, 'max', {
    ...descriptors.max,
    get () {
      const max = descriptors.max!.get!.call(this) as number
      reads.max++
      if (delayPast(max / 1e6, limit)) reads.maxPast++
      return max
    }
  })
  Object.defineProperty(proto, 'mean', { ...descriptors.mean, get () { reads.mean++; return descriptors.mean!.get!.call(this) } })
  t.teardown(() => {
    Object.defineProperty(proto, 'max', descriptors.max!)
    Object.defineProperty(proto, 'mean', descriptors.mean!)
  })
  return reads
}

t.test('overload: the mean decides, and is read only when the max is past the limit', async (t) => {
  const reads = watchReads(t, 50)
  const lifecycle = started(t, { maxEventLoopDelay: 50, sampleInterval: 300 })
  // Long turns (100 ms) among short ones (5 ms), a second or so apart: the
  // max of their samples is past the limit, their mean is not.
  const seen = new Set<string | undefined>()
  for (let round = 0; round < 3; round++) {
    for (const turns of [await longTurns(lifecycle, 5, 150), await longTurns(lifecycle, 100, 1)]) turns.forEach((overload) => seen.add(overload))
  }
  for (const overload of await longTurns(lifecycle, 5, 80)) seen.add(overload)
  t.same([...seen], [undefined], 'long turns among short ones: not overloaded')
  t.ok(reads.max > reads.maxPast, `samples read the max (${reads.max})`)
  t.ok(reads.maxPast > 0, `a long turn put it past the limit (${reads.maxPast})`)
  t.equal(reads.mean, reads.maxPast, 'the mean was read in those samples and no other')
})

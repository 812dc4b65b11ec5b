// The process's own view of its load: busy is requests arriving while the
// event loop has no time to spare (webhook deliveries yield then).
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { Lifecycle } from '../lib/lifecycle.ts'

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

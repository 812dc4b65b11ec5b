// The warm-up that bench/tick-shape.ts measures after and
// test/tick-shape.test.ts checks after, as script text for a child
// process: nextTicks interleaved with ten full collections (it needs
// --expose-gc), as a server's start has, after 100,000 nextTicks had the
// code optimized. It defines `batch()` (1,000 nextTicks, then a turn of
// the event loop) for what follows it.
export const WARM_UP = `
function batch () {
  return new Promise((resolve) => {
    for (let i = 0; i < 1000; i++) process.nextTick(() => {})
    setImmediate(resolve)
  })
}
for (let round = 0; round < 200; round++) {
  await batch()
  if (round % 20 === 10) globalThis.gc()
}
`

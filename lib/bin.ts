#!/usr/bin/env -S node --max-semi-space-size=4 --v8-pool-size=1
// (A smaller young generation than V8's default keeps the resident memory
// of a busy server near its live data; throughput is unchanged. One V8
// helper thread instead of Node's four, whatever the cores: the service
// scales by processes (WORKERS), and each helper grows a malloc arena of
// its own. No malloc setting here: README, Memory, says why.)
// `plant-store`, the command: on a Node.js release it cannot run on, it
// says so in one line; otherwise it runs the server. (The server's own
// imports would fail before any check of theirs could run.)
const [major] = process.versions.node.split('.')
if (Number(major) < 24) {
  process.stderr.write(`plant-store: needs Node.js 24 or newer; this is Node.js ${process.versions.node}\n`)
  process.exit(1)
}
// Before any of the server's modules loads: see tick-shape.ts.
const { holdTickShape } = await import('./tick-shape.ts')
holdTickShape()
// The server's modules are compiled once and kept in Node's compile cache,
// in a directory of this user's alone (compile-cache.ts): later starts skip
// parsing them. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
const { enableCompileCache } = await import('node:module')
const { compileCacheDirectory } = await import('./compile-cache.ts')
const cache = compileCacheDirectory()
if (cache !== undefined) enableCompileCache(cache)
await import('./server.ts')
// Listening now (or, as the primary of WORKERS, forking). V8 hands each
// finished Maglev compile to a helper thread to free, and under load many
// of them waited there at once (`--trace-zone-stats`), memory malloc then
// kept: from here on they are freed on the main thread. Not from the
// start, where freeing start-up's own compiles there lengthens the start.
// (V8 reads the flag on the main thread only, as each compile is installed.)
const { setFlagsFromString } = await import('node:v8')
setFlagsFromString('--no-maglev-destroy-on-background')

// autocannon's setupRequest for unique-id creates, loaded by each worker
// thread of a run: the worker claims an index (the first free directory
// under BENCH_CLAIMS, made by mkdir, which only one caller can make), and
// makes ids from BENCH_FIRST_ID + index × BENCH_ID_STRIDE on.
'use strict'
const { mkdirSync } = require('node:fs')
const { join } = require('node:path')

function claim () {
  for (let index = 0; ; index++) {
    try {
      mkdirSync(join(process.env.BENCH_CLAIMS, String(index)))
      return index
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
    }
  }
}

let next = Number(process.env.BENCH_FIRST_ID) + claim() * Number(process.env.BENCH_ID_STRIDE)

module.exports = function setupRequest (request) {
  return { ...request, body: `{"id":${++next},"name":"Fern","tag":"green"}` }
}

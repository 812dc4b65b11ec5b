// autocannon's setupRequest for reads of the seeded plants (1 to BENCH_SEEDED).
'use strict'
const seeded = Number(process.env.BENCH_SEEDED)

module.exports = function setupRequest (request) {
  return { ...request, path: `/plants/${1 + Math.floor(Math.random() * seeded)}` }
}

// Clients that never read what they asked for hold at most one answer of
// the largest page each: 20 such sockets used to take the server to 4.87 GB
// (finding 5). Measured on a real server process, in bytes of resident
// memory, not in time.
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { setTimeout } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { start } from './server-process.ts'

const TOKEN = 'slow-token'
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
const PAGE = `GET /plants?limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`
const MB = 1024 * 1024

function rss (pid: number): number {
  const line = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(line![1]) * 1024
}

// Sockets that send requests and never read a byte of the answers.
function nonReaders (t: Test, url: string, count: number, request: string): Socket[] {
  const { port } = new URL(url)
  const sockets = Array.from({ length: count }, () => {
    const socket = connect(Number(port), '127.0.0.1')
    socket.on('error', () => {})
    socket.write(request)
    socket.pause()
    return socket
  })
  t.teardown(() => { for (const socket of sockets) socket.destroy() })
  return sockets
}

t.test('the largest page, and what clients that do not read it cost', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: TOKEN, LOG_LEVEL: 'warn', WRITE_TIMEOUT: '60000' })
  // The longest plants the spec allows, in the characters JSON writes
  // longest (\u0001 takes six bytes), with the longest ids.
  const name = '\u0001'.repeat(256)
  const tag = '\u0001'.repeat(64)
  for (let i = 0; i < 1000; i += 50) {
    await Promise.all(Array.from({ length: 50 }, async (_, j) => {
      const res = await fetch(`${server.url}/plants`, { method: 'POST', headers, body: JSON.stringify({ id: `@${-(2n ** 63n) + BigInt(i + j)}@`, name, tag }).replace(/"@(-?\d+)@"/, '$1') })
      if (res.status !== 200) throw new Error(`create answered ${res.status}: ${await res.text()}`)
    }))
  }
  const page = await fetch(`${server.url}/plants?limit=1000`, { headers })
  const bytes = (await page.arrayBuffer()).byteLength
  t.comment(`the largest page: ${bytes} bytes`)
  t.ok(bytes <= 2 * MB, `the largest page is at most 2 MiB (${bytes} bytes)`)

  await setTimeout(500)
  const before = rss(server.pid)
  nonReaders(t, server.url, 20, PAGE)
  await setTimeout(2000)
  const slow = rss(server.pid) - before
  t.comment(`RSS with 20 sockets not reading a page each: +${(slow / MB).toFixed(1)} MB (${(before / MB).toFixed(0)} MB before)`)
  t.ok(slow < 20 * 3 * MB, 'about one page each, at most')

  const beforePipelined = rss(server.pid)
  nonReaders(t, server.url, 1, PAGE.repeat(30))
  await setTimeout(2000)
  const pipelined = rss(server.pid) - beforePipelined
  t.comment(`RSS with 30 pipelined pages unread on one socket: +${(pipelined / MB).toFixed(1)} MB`)
  t.ok(pipelined < 5 * 3 * MB, 'the pipelined answers wait their turn instead of piling up')

  const flooding = nonReaders(t, server.url, 1, PAGE.repeat(100))[0]!
  await setTimeout(1000)
  t.ok(flooding.destroyed || flooding.readableEnded || await new Promise((resolve) => {
    flooding.once('close', () => resolve(true))
    flooding.resume()
    setTimeout(3000).then(() => resolve(false))
  }), 'more than 32 pipelined requests drop the connection')
  const health = await fetch(`${server.url}/healthz`)
  t.equal(health.status, 200, 'and everyone else is still served')
})

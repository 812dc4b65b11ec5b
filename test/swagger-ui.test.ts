// Swagger UI in a real browser (Debian's Chromium driven by playwright-core;
// no test tool downloads a browser): authorize, try a create, see 200; a
// bad token, see 401. Mounted under a prefix, so that the served spec's
// `servers` entry must point at it. The screenshot is kept as an artifact.
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import Fastify from 'fastify'
import { chromium } from 'playwright-core'
import t from 'tap'
import plantStore from '../lib/plugin.ts'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const ARTIFACTS = new URL('../test-artifacts/', import.meta.url)
const TOKEN = 'browser-token'

let skip: string | false = false
if (!existsSync(CHROMIUM)) {
  skip = `no Chromium at ${CHROMIUM}: install Debian's chromium package or set CHROMIUM_PATH`
  // CI installs it: there, a missing browser is a failure, not a skip.
  if (process.env.PLANT_STORE_REQUIRE_BROWSER === '1') throw new Error(skip)
}

t.test('Swagger UI: Authorize, Try it out, 200; a bad token, 401', { skip }, async (t) => {
  const app = Fastify()
  await app.register(plantStore, { prefix: '/api', tokens: [TOKEN], database: 'memory:', overload: false })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Root in a container needs --no-sandbox; the rest keeps Chromium off a
    // network it cannot reach.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
  })
  t.teardown(() => browser.close())
  const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } })
  await page.goto(`${base}/api/docs`)

  const authorize = async (token: string) => {
    await page.click('.auth-wrapper button.authorize')
    const dialog = page.locator('.modal-ux')
    // Authorize, Logout and Close are all "btn modal-btn auth" buttons.
    await dialog.locator('button.modal-btn.auth').first().waitFor()
    const logout = dialog.locator('button.modal-btn.auth:not(.authorize):not(.btn-done)')
    if (await logout.count() > 0) await logout.click()
    await dialog.locator('input[type=text], input[type=password]').first().fill(token)
    await dialog.locator('button.modal-btn.auth.authorize').click()
    await dialog.locator('button.modal-btn.btn-done').click()
  }
  const operation = page.locator('#operations-plants-createPlant')
  const execute = async (body: string) => {
    await operation.locator('textarea.body-param__text').fill(body)
    await operation.locator('button.execute').click()
    const status = operation.locator('.live-responses-table tbody .response-col_status').first()
    await status.waitFor()
    return (await status.textContent())?.trim()
  }

  const tryItOut = async () => {
    if (!await operation.locator('.opblock-body').isVisible()) await operation.locator('.opblock-summary').click()
    const button = operation.locator('button.try-out__btn')
    await button.waitFor()
    if ((await button.textContent())?.includes('Try it out')) await button.click()
    await operation.locator('textarea.body-param__text').waitFor()
  }

  await authorize(TOKEN)
  await tryItOut()
  t.equal(await execute('{"id": 9007199254740993, "name": "Fern", "tag": "green"}'), '200', 'Try it out reaches this server: 200')
  t.match(await operation.locator('.live-responses-table tbody .response-col_description').first().textContent(), /"name": "Fern"/)

  await mkdir(ARTIFACTS, { recursive: true })
  await page.screenshot({ path: new URL('swagger-ui-200.png', ARTIFACTS).pathname, fullPage: true })

  // Every digit of an id past 2^53 reaches the page: Swagger UI's own
  // pretty-printing (JSON.parse) would show 9007199254740996.
  const ids = ['9007199254740995', '-9223372036854775808']
  t.equal(await execute(`{"id": ${ids[1]}, "name": "Edge"}`), '200')
  t.equal(await execute(`{"id": ${ids[0]}, "name": "Ivy"}`), '200')
  const list = page.locator('#operations-plants-listPlants')
  if (!await list.locator('.opblock-body').isVisible()) await list.locator('.opblock-summary').click()
  const listTry = list.locator('button.try-out__btn')
  await listTry.waitFor()
  if ((await listTry.textContent())?.includes('Try it out')) await listTry.click()
  await list.locator('button.execute').click()
  const responses = list.locator('.live-responses-table').first()
  await responses.waitFor()
  let shown = ''
  for (let tries = 0; tries < 100 && !shown.includes('"Ivy"'); tries++) {
    shown = await responses.textContent() ?? ''
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  for (const id of [...ids, '9007199254740993']) t.match(shown, new RegExp(`"id": ${id}[,\n ]`), `the list shows ${id} digit for digit`)
  t.notMatch(shown, /9007199254740996|9007199254740992|9223372036854776000/, 'and no rounded neighbour')
  await page.screenshot({ path: new URL('swagger-ui-ids.png', ARTIFACTS).pathname, fullPage: true })

  // The spec's webhooks section is on the page: the newPlant webhook and its body.
  const webhooks = await page.locator('body').textContent() ?? ''
  t.match(webhooks, /Webhooks/, 'a Webhooks section')
  t.match(webhooks, /A new plant/, 'listing newPlant by its summary (no other operation has it)')

  await page.reload()
  await operation.waitFor()
  t.equal(await page.evaluate(() => localStorage.getItem('authorized')?.includes('browser-token')), true, 'the token is kept across reloads')

  await authorize('not-the-token')
  await tryItOut()
  t.equal(await execute('{"id": 1, "name": "Rose"}'), '401', 'a bad token: 401')
  await page.screenshot({ path: new URL('swagger-ui-401.png', ARTIFACTS).pathname, fullPage: true })
})

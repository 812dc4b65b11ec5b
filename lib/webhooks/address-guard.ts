// Where webhooks may go. By default only to public addresses: a
// subscription must not turn the service into a client of its own network
// (SSRF: the database, a cloud metadata endpoint, an admin port). Checked
// when subscribing, and again at each connection, as DNS answers change.
import { lookup } from 'node:dns'
import type { LookupAddress, LookupAllOptions, LookupOneOptions } from 'node:dns'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

// IPv6 has public unicast addresses only in 2000::/3; ipaddr.js calls
// some others (such as the IPv4-compatible ::a.b.c.d) unicast too.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3')

/** Whether an IP address is a public unicast address (not loopback, private, link-local, reserved, …). */
function isPublicAddress (address: string): boolean {
  try {
    const parsed = ipaddr.process(address)
    if (parsed.range() !== 'unicast') return false
    return parsed.kind() === 'ipv4' || (parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6 as [ipaddr.IPv6, number])
  } catch {
    return false
  }
}

// A host name resolving for longer than this is refused at subscription time.
const RESOLVE_TIMEOUT_MS = 5000

function resolveAll (hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`its host did not resolve within ${RESOLVE_TIMEOUT_MS / 1000} s`)), RESOLVE_TIMEOUT_MS)
    lookup(hostname, { all: true }, (err, addresses) => {
      clearTimeout(timer)
      if (err) reject(new Error(`its host does not resolve (${err.code ?? 'error'})`))
      else resolve(addresses)
    })
  })
}

// URL host names keep IPv6 literals in brackets.
function hostOf (url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1')
}

/** What is wrong with a subscription URL, if anything: a sentence for a 400. */
export async function urlProblem (raw: string, allowPrivateNetworks: boolean): Promise<string | undefined> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'body/url must be an absolute http or https URL'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'body/url must be an http or https URL'
  if (url.username !== '' || url.password !== '') return 'body/url must not hold credentials: a receiver checks the signature instead'
  if (allowPrivateNetworks) return undefined
  const host = hostOf(url)
  let addresses: string[]
  try {
    addresses = isIP(host) ? [host] : (await resolveAll(host)).map(({ address }) => address)
  } catch (err) {
    return `body/url: ${(err as Error).message}`
  }
  // (The message names no address: it would map the network for a client.)
  return addresses.every(isPublicAddress)
    ? undefined
    : 'body/url must reach a public address: its host is or resolves to a loopback, private or otherwise non-public address (set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it)'
}

/** Why a connection to this URL's host is refused now, for a host written as an IP address (names are checked by `guardedLookup`). */
export function literalAddressProblem (url: URL, allowPrivateNetworks: boolean): string | undefined {
  const host = hostOf(url)
  return allowPrivateNetworks || !isIP(host) || isPublicAddress(host) ? undefined : 'the host is not a public address'
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/** A `lookup` for connections that refuses non-public addresses (undici passes it to net.connect). */
export function guardedLookup (allowPrivateNetworks: boolean) {
  return (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, [])
      const refused = allowPrivateNetworks ? undefined : addresses.find(({ address }) => !isPublicAddress(address))
      if (refused !== undefined) {
        return callback(Object.assign(new Error('the host resolves to an address that is not public'), { code: 'ENOTPUBLIC' }), [])
      }
      if (options.all === true) callback(null, addresses)
      else callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}

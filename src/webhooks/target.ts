import { lookup as dnsLookup, promises as dnsPromises, type LookupAddress, type LookupOptions } from 'node:dns'
import { BlockList, isIP } from 'node:net'

// Where a webhook may send: http or https only, and never to this host or the private network
// (SSRF), unless WEBHOOK_ALLOW_PRIVATE says the receivers are internal (WEBHOOK_PRIVATE_NETWORKS
// narrowing it to the networks named), and never to a cloud's metadata service, whatever is allowed.
// A URL is checked when the webhook is saved (its name resolved then too), and again before every
// attempt: its literal address, and a name after each resolution (DNS can change).

// Two lists: a BlockList matches an IPv4 address against IPv6 rules too (as ::a.b.c.d), which ::/96 would catch.
const PRIVATE_V4 = new BlockList()
const PRIVATE_V6 = new BlockList()
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) PRIVATE_V4.addSubnet(net, bits, 'ipv4')
for (const [net, bits] of [
  // Unspecified, loopback and the IPv4-compatible and IPv4-mapped forms (::ffff:127.0.0.1 and the like).
  ['::', 96], ['::ffff:0:0', 96],
  // Unique local (fd00:ec2::254, a cloud's metadata service, is one), link-local, site-local, multicast, discard, documentation.
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['100::', 64], ['2001:db8::', 32],
  // The local-use NAT64 prefix (RFC 8215): a network's own translator, to wherever it chooses.
  ['64:ff9b:1::', 48],
  // Teredo: a relay reaches the IPv4 address it embeds (obfuscated), which may be a private one.
  ['2001::', 32]
] as const) PRIVATE_V6.addSubnet(net, bits, 'ipv6')

/**
 * An IPv4 address inside a NAT64 (64:ff9b::/96), IPv4-translated (::ffff:0:a.b.c.d, SIIT) or
 * 6to4 (2002::/16) address, which reaches it.
 */
function embeddedIpv4 (address: string): string | undefined {
  const groups = expandIpv6(address)
  if (groups === undefined) return undefined
  const v4 = (hi: number, lo: number): string => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return v4(groups[6], groups[7])
  if (groups.slice(0, 4).every((g) => g === 0) && groups[4] === 0xffff && groups[5] === 0) return v4(groups[6], groups[7])
  if (groups[0] === 0x2002) return v4(groups[1], groups[2])
  return undefined
}

function expandIpv6 (address: string): number[] | undefined {
  let text = address
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number)
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::')
  const part = (s: string | undefined): number[] => s ? s.split(':').map((g) => parseInt(g, 16)) : []
  const h = part(head)
  const t = part(tail)
  if (tail === undefined) return h.length === 8 ? h : undefined
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t]
}

/** True for an address a webhook must not reach: loopback, private, link-local, metadata, and their IPv6 forms. */
export function isPrivateAddress (address: string): boolean {
  const family = isIP(address)
  if (family === 4) return PRIVATE_V4.check(address, 'ipv4')
  if (family !== 6) return true
  if (PRIVATE_V6.check(address, 'ipv6')) return true
  const inner = embeddedIpv4(address)
  return inner !== undefined && PRIVATE_V4.check(inner, 'ipv4')
}

/**
 * The addresses of cloud metadata services (AWS, GCP, Azure, OpenStack and most others; ECS task
 * and EKS pod credentials; Alibaba; Oracle; Tencent): they hand out the host's credentials to
 * whoever asks, so no setting lets a webhook reach one.
 */
const METADATA_V4 = new Set(['169.254.169.254', '169.254.170.2', '169.254.170.23', '100.100.100.200', '192.0.0.192', '169.254.0.23'])
const METADATA_V6 = ['fd00:ec2::254', 'fd00:ec2::23'].map((a) => expandIpv6(a)!.join(':'))

/**
 * The IPv4 address an IPv6 one reaches, in every writing the contract names: mapped, translated,
 * NAT64 (well-known and local-use, whose last 32 bits carry it), 6to4 and IPv4-compatible.
 */
function reachedIpv4 (groups: number[]): string | undefined {
  const v4 = `${groups[6] >> 8}.${groups[6] & 255}.${groups[7] >> 8}.${groups[7] & 255}`
  if (groups.slice(0, 5).every((g) => g === 0) && (groups[5] === 0 || groups[5] === 0xffff)) return v4
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups[2] === 1) return v4
  return embeddedIpv4(groups.map((g) => g.toString(16)).join(':'))
}

/** True for a cloud metadata service's address, in any IPv4 or IPv6 writing of it. */
export function isMetadataAddress (address: string): boolean {
  const family = isIP(address)
  if (family === 4) return METADATA_V4.has(address)
  if (family !== 6) return false
  const groups = expandIpv6(address.replace(/%.*$/, ''))
  if (groups === undefined) return false
  if (METADATA_V6.includes(groups.join(':'))) return true
  const inner = reachedIpv4(groups)
  return inner !== undefined && METADATA_V4.has(inner)
}

/** The internal networks WEBHOOK_PRIVATE_NETWORKS names: the only private addresses webhooks may reach. */
export class PrivateNetworks {
  private readonly v4 = new BlockList()
  private readonly v6 = new BlockList()

  constructor (readonly entries: readonly string[]) {
    for (const entry of entries) {
      const [address, bits] = entry.split('/')
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
      const list = family === 'ipv6' ? this.v6 : this.v4
      if (bits === undefined) list.addAddress(address, family)
      else list.addSubnet(address, Number(bits), family)
    }
  }

  /** An IPv6 writing of an IPv4 address is in a network its IPv4 address is in. */
  has (address: string): boolean {
    const family = isIP(address)
    if (family === 4) return this.v4.check(address, 'ipv4')
    if (family !== 6) return false
    if (this.v6.check(address, 'ipv6')) return true
    const groups = expandIpv6(address)
    const inner = groups === undefined ? undefined : reachedIpv4(groups)
    return inner !== undefined && this.v4.check(inner, 'ipv4')
  }
}

/**
 * The private addresses a webhook may reach: none (false), every one (true: WEBHOOK_ALLOW_PRIVATE),
 * or those of the networks named (WEBHOOK_PRIVATE_NETWORKS). A metadata service's never.
 */
export type PrivateReach = boolean | PrivateNetworks

/** The reach the service's settings give (config.ts's webhookAllowPrivate and webhookPrivateNetworks). */
export const privateReach = (config: { webhookAllowPrivate: boolean, webhookPrivateNetworks: string[] }): PrivateReach =>
  config.webhookAllowPrivate && config.webhookPrivateNetworks.length > 0 ? new PrivateNetworks(config.webhookPrivateNetworks) : config.webhookAllowPrivate

/** What an address is that a webhook must not reach (for a message), or undefined when it may. */
export function refusedAddress (address: string, reach: PrivateReach): string | undefined {
  if (isMetadataAddress(address)) return 'a cloud metadata service\'s address, refused whatever WEBHOOK_ALLOW_PRIVATE allows'
  if (reach === true || !isPrivateAddress(address)) return undefined
  if (reach === false) return 'a loopback, private, link-local or metadata address'
  return reach.has(address) ? undefined : 'a loopback, private, link-local or metadata address outside WEBHOOK_PRIVATE_NETWORKS'
}

/**
 * Why this URL cannot be a webhook's target, or undefined when it can. The WHATWG parser has already
 * turned decimal, octal and hexadecimal IPv4 forms (2130706433, 0177.0.0.1, 0x7f.1) into dotted ones.
 */
export function targetProblem (text: string, allowPrivate: PrivateReach): string | undefined {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    // The WHATWG parser refuses a zone id (fe80::1%25eth0): it names an interface of the sending host.
    if (/\[[^\]]*%/.test(text)) return 'must not hold an IPv6 zone id (%25…): a zone names a network interface of the sending host'
    return 'must be an absolute URL (https://…)'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http:// or https:// URL'
  if (url.port === '0') return 'must not name port 0, which no receiver listens on'
  // A password in the URL would come back in every read of the webhook and every log line about it.
  if (url.username !== '' || url.password !== '') return 'must not hold a user name or password (user:pass@): put a secret in the path, or have the receiver check the webhook-signature header'
  return addressProblem(url, allowPrivate)
}

/**
 * Why this URL's host, as written, cannot be a target: a literal address it must not reach, or
 * localhost (with an allowlist, the address localhost resolves to is the allowlist's to decide).
 */
function addressProblem (url: URL, allowPrivate: PrivateReach): string | undefined {
  const problem = literalProblem(url.href, allowPrivate)
  if (problem !== undefined) return problem
  if (allowPrivate === false && /(^|\.)localhost\.?$/i.test(url.hostname)) return 'must not name this host (localhost)'
  return undefined
}

/**
 * Why a delivery must not go to this URL's literal address: checked before every attempt (a webhook
 * saved while WEBHOOK_ALLOW_PRIVATE was on is refused once it is off), as a literal address never
 * reaches safeLookup below, which checks every name after resolution.
 */
export function literalProblem (text: string, allowPrivate: PrivateReach): string | undefined {
  let host: string
  try {
    host = new URL(text).hostname.replace(/^\[(.*)\]$/, '$1')
  } catch {
    return 'must be an absolute URL (https://…)'
  }
  const refused = isIP(host) === 0 ? undefined : refusedAddress(host, allowPrivate)
  return refused === undefined ? undefined : `must not name ${refused} (${host})`
}

export type Resolver = (hostname: string) => Promise<Array<{ address: string }>>
const systemResolver: Resolver = (hostname) => dnsPromises.lookup(hostname, { all: true })
/** The longest a save waits for a name to resolve: a slow DNS server delays the answer no more. */
const RESOLVE_MS = 2_000

/**
 * Why a URL's name, resolved now, cannot be a target: a webhook to `http://vm:9999/` where vm is
 * 127.0.0.1 is refused when saved, not retried for 3 days. A name that does not resolve (yet) is
 * let through: deliveries say why they fail, and every one is checked again after resolution.
 */
export async function resolvedProblem (text: string, allowPrivate: PrivateReach, resolver: Resolver = systemResolver): Promise<string | undefined> {
  const host = new URL(text).hostname.replace(/^\[(.*)\]$/, '$1')
  if (isIP(host) !== 0) return undefined
  let timer: NodeJS.Timeout | undefined
  const gaveUp = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), RESOLVE_MS).unref() })
  try {
    const addresses = await Promise.race([resolver(host).catch(() => undefined), gaveUp])
    const refused = addresses?.find((a) => refusedAddress(a.address, allowPrivate) !== undefined)
    return refused === undefined ? undefined : `must not name ${refusedAddress(refused.address, allowPrivate)!} (${host} resolves to ${refused.address})`
  } finally {
    clearTimeout(timer)
  }
}

/** The URL as shown and logged: a user name or password (only in a webhook saved before they were refused) replaced. */
export function shownUrl (text: string): string {
  try {
    const url = new URL(text)
    if (url.username === '' && url.password === '') return text
    url.username = '[redacted]'
    url.password = ''
    return url.href
  } catch {
    return text
  }
}

export class PrivateAddressRefused extends Error {
  readonly code = 'EPRIVATEADDRESS'
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * A DNS lookup for outgoing connections that refuses a name resolving to any private address (all
 * of its addresses are checked, so a second record cannot slip one in), then connects to what it checked.
 */
export function safeLookup (allowPrivate: PrivateReach) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) { callback(err, []); return }
      const refused = addresses.find((a) => refusedAddress(a.address, allowPrivate) !== undefined)
      if (refused !== undefined || addresses.length === 0) {
        const what = refused === undefined ? 'a loopback, private, link-local or metadata address' : refusedAddress(refused.address, allowPrivate)!
        callback(new PrivateAddressRefused(`${hostname} resolves to ${refused?.address ?? 'no address'}: ${what} is refused`), [])
        return
      }
      if (options.all === true) callback(null, addresses)
      else callback(null, addresses[0].address, addresses[0].family)
    })
  }
}

/** The same receiver, however the URL was written (host case, a default port, an empty path). */
const sameTarget = (a: string, b: string): boolean => URL.canParse(a) && URL.canParse(b) && new URL(a).href === new URL(b).href

/**
 * The webhook (other than `except`) already sending to `url`, if any: a second one would deliver
 * every change twice to one receiver, which then sees each change two times under two ids.
 */
export const webhookSendingTo = <W extends { id: number, url: string }>(webhooks: W[], url: string, except?: number): W | undefined =>
  webhooks.find((w) => w.id !== except && sameTarget(w.url, url))

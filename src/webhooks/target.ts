import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { BlockList, isIP } from 'node:net'

// Where a webhook may send: http or https only, and never to this host, the private network or a
// cloud's metadata service (SSRF), unless WEBHOOK_ALLOW_PRIVATE says the receivers are internal.
// A URL's literal address is checked when the webhook is saved; a name, after each resolution.

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
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['100::', 64], ['2001:db8::', 32]
] as const) PRIVATE_V6.addSubnet(net, bits, 'ipv6')

/** An IPv4 address inside a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) address, which reaches it. */
function embeddedIpv4 (address: string): string | undefined {
  const groups = expandIpv6(address)
  if (groups === undefined) return undefined
  const v4 = (hi: number, lo: number): string => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return v4(groups[6], groups[7])
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
 * Why this URL cannot be a webhook's target, or undefined when it can. The WHATWG parser has already
 * turned decimal, octal and hexadecimal IPv4 forms (2130706433, 0177.0.0.1, 0x7f.1) into dotted ones.
 */
export function targetProblem (text: string, allowPrivate: boolean): string | undefined {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'must be an absolute URL (https://…)'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http:// or https:// URL'
  if (allowPrivate) return undefined
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  if (isIP(host) !== 0 && isPrivateAddress(host)) return `must not name a loopback, private, link-local or metadata address (${host})`
  if (/(^|\.)localhost\.?$/i.test(host)) return 'must not name this host (localhost)'
  return undefined
}

export class PrivateAddressRefused extends Error {
  readonly code = 'EPRIVATEADDRESS'
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * A DNS lookup for outgoing connections that refuses a name resolving to any private address (all
 * of its addresses are checked, so a second record cannot slip one in), then connects to what it checked.
 */
export function safeLookup (allowPrivate: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) { callback(err, []); return }
      const refused = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address))
      if (refused !== undefined || addresses.length === 0) {
        callback(new PrivateAddressRefused(`${hostname} resolves to ${refused?.address ?? 'no address'}: a loopback, private, link-local or metadata address is refused`), [])
        return
      }
      if (options.all === true) callback(null, addresses)
      else callback(null, addresses[0].address, addresses[0].family)
    })
  }
}

import { hash, randomBytes } from 'node:crypto'

// A key's secret and the one form of it the catalogue keeps.

/** 32 random bytes, base64url, after a prefix that secret scanners (and people) recognise. */
export function newSecret (): string {
  return `pcat_${randomBytes(32).toString('base64url')}`
}

/**
 * SHA-256, hex. A fast hash is enough: the secret holds 256 random bits, so no guess list or
 * brute force gets anywhere, and a slow hash would cost every request that the cache misses.
 */
export function hashOf (secret: string): string {
  return hash('sha256', secret, 'hex')
}

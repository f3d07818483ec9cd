// ETags name one version of one plant: "<id>.<version>".

export const etagOf = (p: { id: number, version: number }): string => `"${p.id}.${p.version}"`

const TAG = /(W\/)?"([^"]*)"/g

/**
 * The versions of plant `id` that an If-Match header accepts: undefined when any version will do
 * (no header, or `*`); an empty list when nothing can match. Weak tags never match (strong comparison).
 */
export function ifMatchVersions (header: string | undefined, id: number): number[] | undefined {
  if (header === undefined || header.trim() === '*') return undefined
  const versions: number[] = []
  for (const [, weak, value] of header.matchAll(TAG)) {
    const [tagId, version] = value.split('.')
    if (!weak && Number(tagId) === id && /^\d+$/.test(version ?? '')) versions.push(Number(version))
  }
  return versions
}

/** If-None-Match uses weak comparison: `*`, or any listed tag equal to the current one. */
export function ifNoneMatchHits (header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  for (const [, , value] of header.matchAll(TAG)) if (`"${value}"` === etag) return true
  return false
}

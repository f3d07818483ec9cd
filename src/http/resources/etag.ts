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

/**
 * Why an If-Match header can match nothing whatever the version: the value is not quoted (`3.2`,
 * copied without the quotes that are part of an ETag), or every tag in it is weak (`W/"3.2"`, which
 * strong comparison never matches). Said in a 412's detail, as the batch says it of an `ifMatch`.
 */
export function ifMatchMistake (header: string | undefined): string | undefined {
  if (header === undefined || header.trim() === '*') return undefined
  const tags = [...header.matchAll(TAG)]
  if (tags.length === 0) {
    return `If-Match ${header.trim()} is not an ETag: an ETag is in double quotes, as the ETag header gives it (If-Match: "${header.trim().replace(/"/g, '')}")`
  }
  if (tags.every(([, weak]) => weak !== undefined)) {
    return `If-Match ${header.trim()} is a weak ETag, which a write never accepts: send the ETag without W/ (If-Match: "${tags[0][2]}")`
  }
  return undefined
}

/** If-None-Match uses weak comparison: `*`, or any listed tag equal to the current one. */
export function ifNoneMatchHits (header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  if (header.trim() === '*') return true
  for (const [, , value] of header.matchAll(TAG)) if (`"${value}"` === etag) return true
  return false
}

import { randomBytes } from 'node:crypto'
import { crc32, deflateSync } from 'node:zlib'
import sharp from 'sharp'

// Pictures for the photo tests, made here so every byte of their metadata is known.

/** Strings planted in the phone picture's metadata: none may ever be served. */
export const SECRETS = ['SecretPhoneCo', 'secret-description-text', 'secret-xmp-text', 'secret-gps-datum']

/**
 * A phone-style JPEG: stored sideways (400×300, red left half, blue right half) with EXIF
 * orientation 6 (turn 90° clockwise to view), GPS, maker and description text, and XMP.
 * Upright it is 300×400, red on top, blue below.
 */
export async function phoneJpeg (): Promise<Buffer> {
  return sharp({ create: { width: 400, height: 300, channels: 3, background: { r: 220, g: 0, b: 0 } } })
    .composite([{ input: { create: { width: 200, height: 300, channels: 3, background: { r: 0, g: 0, b: 220 } } }, left: 200, top: 0 }])
    .jpeg({ quality: 90 })
    .withExif({
      IFD0: { Make: SECRETS[0], ImageDescription: SECRETS[1] },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 0/1', GPSLongitudeRef: 'W', GPSLongitude: '0/1 7/1 0/1', GPSMapDatum: SECRETS[3] }
    })
    .withMetadata({ orientation: 6 })
    .withXmp(`<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description>${SECRETS[2]}</rdf:Description></rdf:RDF></x:xmpmeta>`)
    .toBuffer()
}

/** A small plain picture of `format`, different for each `seed` (so each has files of its own). */
export async function picture (format: 'jpeg' | 'png' | 'webp', seed = 0, size = 64): Promise<Buffer> {
  const image = sharp({ create: { width: size, height: size, channels: 3, background: { r: seed % 256, g: (seed * 7) % 256, b: 90 } } })
  return image[format]().toBuffer()
}

function chunk (type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(4)
  head.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([head, body, crc])
}

/** A PNG of one header and the rows (each with its filter byte), deflated at level 9. */
export const pngOf = (ihdr: Buffer, rows: Buffer): Buffer => Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk('IHDR', ihdr),
  chunk('IDAT', deflateSync(rows, { level: 9 })),
  chunk('IEND', Buffer.alloc(0))
])

/**
 * A decompression bomb: a valid PNG of `side`×`side` one-bit pixels of one colour, a few KB on
 * the wire, that would take side² bytes or more (×3 or ×4 once expanded) to decode.
 */
export function pngBomb (side: number): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(side, 0)
  ihdr.writeUInt32BE(side, 4)
  ihdr[8] = 1 // bit depth
  ihdr[9] = 0 // greyscale
  const row = Buffer.alloc(1 + Math.ceil(side / 8)) // filter byte 0, then zeros
  const rows = Buffer.alloc(row.length * side)
  return pngOf(ihdr, rows)
}

/**
 * A PNG small on the wire and huge once re-encoded: 8-bit RGB, one random row, then rows filtered
 * "Up" with zero deltas (each the same as the first). Deflated, the zeros are nothing; re-encoded
 * with libvips' default (no filter), each row is random bytes wider than deflate's 32 KB window
 * (`width` over 10,922), so the PNG is about as large as its pixels.
 */
export function filteredRowsPng (width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // RGB
  const rowBytes = 1 + width * 3
  const rows = Buffer.alloc(rowBytes * height)
  randomBytes(width * 3).copy(rows, 1)
  for (let y = 1; y < height; y++) rows[y * rowBytes] = 2 // filter Up, every delta 0
  return pngOf(ihdr, rows)
}

import { createHash } from 'node:crypto'
import type { Metadata, Sharp } from 'sharp'
import { HttpProblem } from '../http/problem.js'
import { MAX_PIXELS, type PhotoFile, type UploadType } from './schemas.js'

// The image work, done by sharp (libvips) on libuv's thread pool: never on the event loop.
// sharp is loaded by the first upload, not at start: loading libvips was a tenth of a cold start,
// and most processes never see a picture.
// libvips' operation cache would keep decoded uploads around for nothing (no picture is processed
// twice), and each picture is given one libvips thread: the route's queue decides how many run
// at once, so the CPU an upload may take is bounded in one place.
type SharpFunction = typeof import('sharp').default
let loading: Promise<SharpFunction> | undefined
const loadSharp = (): Promise<SharpFunction> => (loading ??= import('sharp').then(({ default: sharp }) => {
  sharp.cache(false)
  sharp.concurrency(1)
  return sharp
}))

const FORMAT_OF: Record<UploadType, { format: 'jpeg' | 'png' | 'webp', ext: string }> = {
  'image/jpeg': { format: 'jpeg', ext: 'jpg' },
  'image/png': { format: 'png', ext: 'png' },
  'image/webp': { format: 'webp', ext: 'webp' }
}

export const CONTENT_TYPE_OF_EXT: Record<string, string> = { jpg: 'image/jpeg', png: 'image/png', webp: 'image/webp' }

export interface Processed {
  width: number
  height: number
  thumb: PhotoFile
  display: PhotoFile
  full: PhotoFile
}

const invalid = (detail: string): HttpProblem => new HttpProblem(400, 'invalid-input', detail, [{ path: '/body', message: detail }])

/** The file's name: its SHA-256 (so a URL names one content for ever) and its format. */
const fileOf = (bytes: Buffer, ext: string): PhotoFile =>
  ({ name: `${createHash('sha256').update(bytes).digest('base64url')}.${ext}`, bytes })

/**
 * Checks the picture from its header alone (format, pixel count), then makes the three files:
 * each turned upright by its EXIF orientation and written without any metadata (sharp keeps none
 * unless asked: EXIF, GPS, XMP, IPTC, comments and ICC profiles are all dropped; colours are
 * converted to sRGB first).
 */
export async function processImage (bytes: Buffer, declared: UploadType): Promise<Processed> {
  const { format, ext } = FORMAT_OF[declared]
  const sharp = await loadSharp()
  let meta: Metadata
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata()
  } catch {
    throw invalid(`the body is not a readable ${declared} picture`)
  }
  if (meta.format !== format) throw invalid(`the body is ${meta.format ? `a ${meta.format} picture` : 'not a picture'}, not ${declared}`)
  const { width = 0, height = 0 } = meta
  const pixels = width * (meta.pageHeight ?? height) * Math.max(1, meta.pages ?? 1)
  if (pixels > MAX_PIXELS) {
    throw invalid(`the picture is ${width}×${height} (${(pixels / 1e6).toFixed(1)} megapixels); at most ${MAX_PIXELS / 1e6} megapixels are accepted`)
  }
  // failOn 'warning': a truncated or corrupt picture is refused rather than stored half grey.
  const input = (): Sharp => sharp(bytes, { limitInputPixels: MAX_PIXELS, failOn: 'warning' }).rotate()
  const fit = (size: number): Sharp => input().resize(size, size, { fit: 'inside', withoutEnlargement: true })
  try {
    // One after the other: a picture then takes one core at most, and the other stays with the
    // event loop (three at once tripled the reads' p99 beside uploads on two cores). The small
    // sizes decode the JPEG at 1/2 to 1/8 scale (shrink-on-load), so they cost little.
    const thumb = await fit(256).webp({ quality: 80 }).toBuffer()
    const display = await fit(1280).webp({ quality: 80 }).toBuffer()
    const full = await encode(input(), format).toBuffer({ resolveWithObject: true })
    return {
      width: full.info.width,
      height: full.info.height,
      full: fileOf(full.data, ext),
      display: fileOf(display, 'webp'),
      thumb: fileOf(thumb, 'webp')
    }
  } catch (err) {
    throw invalid(`the picture could not be decoded: ${(err as Error).message.split('\n')[0]}`)
  }
}

function encode (image: Sharp, format: 'jpeg' | 'png' | 'webp'): Sharp {
  if (format === 'jpeg') return image.jpeg({ quality: 90 })
  if (format === 'png') return image.png()
  return image.webp({ quality: 90 })
}

import { hash } from 'node:crypto'
import type { Metadata, OutputInfo, Sharp } from 'sharp'
import { HttpProblem } from '../http/problems/problem.js'
import type { PhotoFile } from '../catalogue/photo.js'
import { MAX_PIXELS, MAX_UPLOAD_BYTES, type UploadType } from './schemas.js'

// The image work, done by sharp (libvips) in the image worker process (image-process.ts, started
// by the first upload: the service itself never loads libvips, a tenth of a cold start).
// libvips' operation cache would keep decoded uploads around for nothing (no picture is processed
// twice), and each of a picture's three files is made on one libvips thread: the route's queue
// decides how many pictures run at once, so the CPU and memory uploads take are bounded in one place.
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

/** The 400 for a body that is not an acceptable picture (also made from the image worker's answer). */
export const invalidPicture = (detail: string): HttpProblem => new HttpProblem(400, 'invalid-input', detail, [{ path: '/body', message: detail }])
const invalid = invalidPicture

/** The file's name: its SHA-256 (so a URL names one content for ever) and its format. */
const fileOf = (bytes: Buffer, ext: string): PhotoFile =>
  ({ name: `${hash('sha256', bytes, 'base64url')}.${ext}`, bytes })

/**
 * Checks the picture from its header alone (format, pixel count), then makes the three files:
 * each turned upright by its EXIF orientation and written without any metadata (sharp keeps none
 * unless asked: EXIF, GPS, XMP, IPTC, comments and ICC profiles are all dropped; colours are
 * converted to sRGB first).
 */
export async function processImage (bytes: Buffer, declared: UploadType, maxFileBytes = MAX_UPLOAD_BYTES): Promise<Processed> {
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
  let made
  try {
    // All three at once, each on one libvips thread: this runs in the image worker, a process of
    // lower priority (image-worker.ts), so the picture takes the cores the requests leave idle.
    // The small sizes decode the JPEG at 1/2 to 1/8 scale (shrink-on-load), so they cost little;
    // the full size (decode, turn, encode) is the longest of the three.
    const [thumb, display, full] = await Promise.all([
      // effort 2 (of 0–6; 4 by default): a phone picture's display file costs clearly less CPU for
      // a few more bytes, at the same quality.
      fit(256).webp({ quality: 80, effort: 2 }).toBuffer(),
      fit(1280).webp({ quality: 80, effort: 2 }).toBuffer(),
      encode(input(), format).toBuffer({ resolveWithObject: true })
    ])
    made = { thumb, display, full: full.data.length <= maxFileBytes ? { ...full, ext } : await fitting(input, full.info.width, full.data.length, maxFileBytes) }
  } catch (err) {
    if (err instanceof HttpProblem) throw err
    throw invalid(`the picture could not be decoded: ${(err as Error).message.split('\n')[0]}`)
  }
  const { thumb, display, full } = made
  return {
    width: full.info.width,
    height: full.info.height,
    full: fileOf(full.data, full.ext),
    display: fileOf(display, 'webp'),
    thumb: fileOf(thumb, 'webp')
  }
}

/** A JPEG that fits is tried this many times, each smaller than the one before, before the picture is refused. */
const FITTING_TRIES = 4

/**
 * The full file when its own format would store more than the upload limit: no stored file is
 * larger than a body may be. A picture can be small on the wire and huge once re-encoded (a PNG
 * whose rows its filters make zeros, each wider than deflate's 32 KB window, grows far past the limit
 * as a PNG of libvips' default filter): such a picture is kept as a JPEG at quality 80
 * (transparency on white), scaled down by the ratio it overshot until it fits.
 */
async function fitting (input: () => Sharp, width: number, tooLarge: number, maxFileBytes: number): Promise<{ data: Buffer, info: OutputInfo, ext: string }> {
  let size = tooLarge
  let scale = 1
  for (let i = 0; i < FITTING_TRIES; i++) {
    const image = scale < 1 ? input().resize(Math.max(1, Math.floor(width * scale))) : input()
    const out = await image.flatten({ background: '#ffffff' }).jpeg({ quality: 80 }).toBuffer({ resolveWithObject: true })
    if (out.data.length <= maxFileBytes) return { ...out, ext: 'jpg' }
    size = out.data.length
    // Bytes grow about with the pixels, so with the square of the side; 0.9 leaves a margin.
    scale *= Math.sqrt(maxFileBytes / size) * 0.9
  }
  throw invalid(`the picture would be stored as ${(size / 1048576).toFixed(1)} MB even as a JPEG scaled down ${FITTING_TRIES - 1} times; ` +
    `no stored file may exceed ${maxFileBytes / 1048576} MiB: send a smaller picture`)
}

function encode (image: Sharp, format: 'jpeg' | 'png' | 'webp'): Sharp {
  // Standard Huffman tables rather than ones optimised for the picture (a second pass over it):
  // a phone picture's full file costs clearly less CPU for a few more bytes.
  if (format === 'jpeg') return image.jpeg({ quality: 90, optimiseCoding: false })
  if (format === 'png') return image.png()
  return image.webp({ quality: 90 })
}

import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import sharp from 'sharp'
import type { Figures, Job } from './load.js'
import { median, r2 } from './figures.js'

// The photos' measured targets, one phase of `npm run bench` (ops `upload` and `photo`), against a
// service of its own on a fresh catalogue of the small size:
//   1. a ~2 MB phone JPEG's upload, answered with all three files stored: p50 of sequential uploads
//      with nothing else running;
//   2. GET by id p99 alone, then beside 8 uploaders that each send the next picture as soon as the
//      last is answered (the ratio, round by round), and the peak memory of the service;
//   3. a thumb file served against GET by id, in requests and bytes a second, in the same rounds,
//      both measured by a client that does not decode the bodies (autocannon turns each into a
//      string, which for binary bodies made the generator the bottleneck).

export const PHOTO_OPS = ['upload', 'photo'] as const

export interface PhotoPhase {
  url: string
  pid: number
  idMax: number
  rounds: number
  seconds: number
  warmSeconds: number
  connections: number
  runLoad: (job: Job) => Promise<Figures>
}

export interface PhotoFigures {
  picture: { bytes: number, width: number, height: number, distinct: number }
  alone: { p50: number, min: number, max: number, count: number, cpuMs: number }
  /** `get`, `beside`: autocannon; `plainGet`, `photo`: a client that drops the bodies (bench/load.ts, measureBinary). */
  rounds: Array<{ get: Figures, beside: Figures, plainGet: Figures, photo: Figures, uploads: number, busy: number, uploadP50: number }>
  files: { thumbBytes: number, displayBytes: number, fullBytes: number }
  memory: Memory
}

interface Memory {
  /** The service process alone (VmHWM, and RssAnon sampled every 100 ms). */
  servicePeakMb: number
  servicePeakAnonMb: number
  /** The service's file-backed pages (its binary, libraries, the mapped database), sampled. */
  servicePeakFileMb: number
  /** The service and its child processes together (an image worker, if any), sampled every 100 ms. */
  treePeakMb: number
  treePeakAnonMb: number
  children: number
}

const UPLOADERS = 8
const ALONE = 15
const WIDTH = 4032
const HEIGHT = 3024

/**
 * `count` different phone pictures: 4032×3024 (12 megapixels), EXIF orientation 6 (taken
 * upright, stored sideways, as phones do), about 2 MB each. Different pixels in each, so every
 * upload stores new files (the same picture twice would share its files and skip the writes).
 * Deterministic: gradients with pseudo-random grain, the picture's number in a band of pixels.
 */
export async function phonePictures (count: number): Promise<Buffer[]> {
  const raw = Buffer.alloc(WIDTH * HEIGHT * 3)
  let seed = 7
  for (let i = 0; i < raw.length; i += 3) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    const x = (i / 3) % WIDTH
    const y = Math.floor(i / 3 / WIDTH)
    // Grain of 0–9 at quality 88 makes about 2 MB, the size of a 12-megapixel phone JPEG.
    const n = ((seed >> 16) & 15) * 5 >> 3
    raw[i] = (x * 255 / WIDTH + n) & 255
    raw[i + 1] = (y * 255 / HEIGHT + n) & 255
    raw[i + 2] = ((x ^ y) + n) & 255
  }
  const pictures: Buffer[] = []
  for (let p = 0; p < count; p++) {
    const copy = Buffer.from(raw)
    for (let i = 0; i < WIDTH * 3 * 16; i++) copy[i] ^= (p * 37 + i) & 255
    pictures.push(await sharp(copy, { raw: { width: WIDTH, height: HEIGHT, channels: 3 } })
      .jpeg({ quality: 88 }).withMetadata({ orientation: 6 }).toBuffer())
  }
  return pictures
}

const statusOf = (pid: number): string => readFileSync(`/proc/${pid}/status`, 'utf8')
const kb = (text: string, field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? 0)
const mb = (k: number): number => Math.round(k / 1024)

/** The process and its descendants (an image worker is a child of the service). */
function tree (pid: number): number[] {
  const found = [pid]
  for (let i = 0; i < found.length; i++) {
    try {
      const children = readFileSync(`/proc/${found[i]}/task/${found[i]}/children`, 'utf8').trim()
      if (children) found.push(...children.split(' ').map(Number))
    } catch { /* gone */ }
  }
  return found
}

/** User + system CPU of the process tree, all threads, in milliseconds (children that exited are not counted). */
function cpuMs (pid: number): number {
  let ticks = 0
  for (const p of tree(pid)) {
    try {
      const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch { /* gone */ }
  }
  // The kernel's clock ticks are 100 a second on Linux (CLK_TCK).
  return ticks * 10
}

function memorySampler (pid: number): { read: () => Memory, stop: () => void } {
  const peak = { serviceAnon: 0, serviceFile: 0, tree: 0, treeAnon: 0, children: 0 }
  const sample = (): void => {
    let rss = 0
    let anon = 0
    const pids = tree(pid)
    for (const p of pids) {
      try {
        const text = statusOf(p)
        rss += kb(text, 'VmRSS')
        anon += kb(text, 'RssAnon')
        if (p === pid) {
          peak.serviceAnon = Math.max(peak.serviceAnon, kb(text, 'RssAnon'))
          peak.serviceFile = Math.max(peak.serviceFile, kb(text, 'RssFile'))
        }
      } catch { /* gone */ }
    }
    peak.tree = Math.max(peak.tree, rss)
    peak.treeAnon = Math.max(peak.treeAnon, anon)
    peak.children = Math.max(peak.children, pids.length - 1)
  }
  const timer = setInterval(sample, 50)
  return {
    read: () => {
      sample()
      return {
        servicePeakMb: mb(kb(statusOf(pid), 'VmHWM')),
        servicePeakAnonMb: mb(peak.serviceAnon),
        servicePeakFileMb: mb(peak.serviceFile),
        treePeakMb: mb(peak.tree),
        treePeakAnonMb: mb(peak.treeAnon),
        children: peak.children
      }
    },
    stop: () => { clearInterval(timer) }
  }
}

interface Photo { urls: { thumb: string, display: string, full: string } }

export async function measurePhotos (phase: PhotoPhase, log: (line: string) => void): Promise<PhotoFigures> {
  const memory = memorySampler(phase.pid)
  try {
    log('photos: making the pictures…')
    const pictures = await phonePictures(48)
    const meta = await sharp(pictures[0]).metadata()
    log(`photos: ${pictures.length} pictures of ${(pictures[0].length / 1048576).toFixed(2)} MB (${meta.width}×${meta.height}, orientation ${meta.orientation})`)
    let next = 0
    const upload = async (): Promise<{ ms: number, status: number, photo?: Photo }> => {
      const n = next++
      const started = performance.now()
      const res = await fetch(`${phase.url}/v3/plant/${n % phase.idMax + 1}/photos`, {
        method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: new Uint8Array(pictures[n % pictures.length])
      })
      const body = await res.json() as Photo
      const ms = performance.now() - started
      if (res.status !== 201 && res.status !== 503) throw new Error(`an upload answered ${res.status}: ${JSON.stringify(body)}`)
      return { ms, status: res.status, photo: res.status === 201 ? body : undefined }
    }

    // 1. One upload at a time, nothing else running (the first ones start whatever the service starts lazily).
    const first = await upload()
    await upload()
    const cpuBefore = cpuMs(phase.pid)
    const alone: number[] = []
    for (let i = 0; i < ALONE; i++) alone.push((await upload()).ms)
    const cpuPerUpload = (cpuMs(phase.pid) - cpuBefore) / ALONE
    alone.sort((a, b) => a - b)
    log(`photos: upload alone p50 ${alone[ALONE >> 1].toFixed(0)} ms (min ${alone[0].toFixed(0)}, max ${alone[ALONE - 1].toFixed(0)}), ${cpuPerUpload.toFixed(0)} ms CPU each`)

    const urls = first.photo!.urls
    const size = async (path: string): Promise<number> => (await (await fetch(phase.url + path)).arrayBuffer()).byteLength
    const files = { thumbBytes: await size(urls.thumb), displayBytes: await size(urls.display), fullBytes: await size(urls.full) }
    const job = (op: Job['op'], seconds: number, paths?: string[]): Job =>
      ({ url: phase.url, op, seconds, connections: phase.connections, idMax: phase.idMax, paths })
    const thumbs = [urls.thumb]

    await phase.runLoad(job('get', phase.warmSeconds))
    await phase.runLoad({ ...job('photo', phase.warmSeconds, thumbs), binary: true })
    const rounds: PhotoFigures['rounds'] = []
    for (let r = 0; r < phase.rounds; r++) {
      const get = await phase.runLoad(job('get', phase.seconds))
      // 2. The same GET load beside 8 uploaders.
      let uploading = true
      let uploads = 0
      let busy = 0
      const times: number[] = []
      const uploaders = Array.from({ length: UPLOADERS }, async () => {
        while (uploading) {
          const u = await upload()
          if (u.status === 201) { uploads++; times.push(u.ms) } else busy++
          if (u.photo && thumbs.length < 64) thumbs.push(u.photo.urls.thumb)
          // A refused upload retries after a pause, as Retry-After asks (shortened: the round is short).
          if (u.status === 503) await new Promise((resolve) => setTimeout(resolve, 200))
        }
      })
      const beside = await phase.runLoad(job('get', phase.seconds))
      uploading = false
      await Promise.all(uploaders)
      times.sort((a, b) => a - b)
      // 3. Thumbs (of different pictures) against GET by id, both through the same client.
      const plainGet = await phase.runLoad({ ...job('get', phase.seconds), binary: true })
      const photo = await phase.runLoad({ ...job('photo', phase.seconds, thumbs), binary: true })
      const uploadP50 = times.length ? times[times.length >> 1] : NaN
      rounds.push({ get, beside, plainGet, photo, uploads, busy, uploadP50 })
      log(`photos round ${r + 1}: GET ${get.rps} req/s p99 ${get.p99} ms; beside ${UPLOADERS} uploaders ${beside.rps} req/s p99 ${beside.p99} ms ` +
        `(${(beside.p99 / get.p99).toFixed(2)}×), ${uploads} uploads (p50 ${uploadP50.toFixed(0)} ms), ${busy} refused busy; ` +
        `thumb ${photo.rps} req/s p99 ${photo.p99} ms against GET ${plainGet.rps} req/s (${(photo.rps / plainGet.rps).toFixed(2)}×)`)
    }
    return {
      picture: { bytes: pictures[0].length, width: meta.width ?? 0, height: meta.height ?? 0, distinct: pictures.length },
      alone: { p50: alone[ALONE >> 1], min: alone[0], max: alone[ALONE - 1], count: ALONE, cpuMs: cpuPerUpload },
      rounds,
      files,
      memory: memory.read()
    }
  } finally {
    memory.stop()
  }
}

const whole = (x: number): string => Number.isFinite(x) ? String(Math.round(x)) : '-'

/** The photos table: each figure beside its target. */
export function photoTable (f: PhotoFigures): string[] {
  const m = (pick: (r: PhotoFigures['rounds'][number]) => number): number => median(f.rounds.map(pick))
  const p99Ratio = m((r) => r.beside.p99 / r.get.p99)
  const rpsRatio = m((r) => r.photo.rps / r.plainGet.rps)
  const bytesRatio = m((r) => (r.photo.bytesPerSecond ?? NaN) / (r.plainGet.bytesPerSecond ?? NaN))
  const kib = (x: number): string => `${(x / 1024).toFixed(1)} KiB`
  const mark = (ok: boolean): string => ok ? 'met' : 'not met'
  return [
    '',
    `photos: a ${(f.picture.bytes / 1048576).toFixed(2)} MB ${f.picture.width}×${f.picture.height} JPEG (EXIF orientation 6), ${f.picture.distinct} different pictures; ` +
      `files made of it: thumb ${kib(f.files.thumbBytes)}, display ${kib(f.files.displayBytes)}, full ${kib(f.files.fullBytes)}`,
    '',
    '| target | wanted | measured | |',
    '|---|---|---|---|',
    `| upload answered, alone (p50 of ${f.alone.count}) | ≤ 300 ms | ${whole(f.alone.p50)} ms (min ${whole(f.alone.min)}, max ${whole(f.alone.max)}; ${whole(f.alone.cpuMs)} ms CPU each) | ${mark(f.alone.p50 <= 300)} |`,
    `| GET p99 beside ${UPLOADERS} uploaders ÷ alone | ≤ 2 | ${r2(p99Ratio)} (${r2(m((r) => r.beside.p99))} ms against ${r2(m((r) => r.get.p99))} ms; ` +
      `${whole(m((r) => r.beside.rps))} against ${whole(m((r) => r.get.rps))} req/s) | ${mark(p99Ratio <= 2)} |`,
    `| peak RSS while uploading | ≤ 400 MB | ${f.memory.servicePeakMb} MB the service (sampled peaks: RssAnon ${f.memory.servicePeakAnonMb} MB, RssFile ${f.memory.servicePeakFileMb} MB); ` +
      `${f.memory.treePeakMb} MB with its ${f.memory.children} child process(es) (RssAnon ${f.memory.treePeakAnonMb} MB) | ${mark(Math.max(f.memory.servicePeakMb, f.memory.treePeakMb) <= 400)} |`,
    `| thumb file req/s ÷ GET by id | ≥ 0.8 | ${r2(rpsRatio)} (${whole(m((r) => r.photo.rps))} against ${whole(m((r) => r.plainGet.rps))} req/s, both through undici; ` +
      `bytes/s ${r2(bytesRatio)}×: ${whole(m((r) => (r.photo.bytesPerSecond ?? NaN) / 1048576))} against ${r2(m((r) => (r.plainGet.bytesPerSecond ?? NaN) / 1048576))} MB/s) | ${mark(rpsRatio >= 0.8)} |`,
    '',
    `uploads answered during each GET round beside them: ${f.rounds.map((r) => `${r.uploads} (p50 ${whole(r.uploadP50)} ms, ${r.busy} refused busy)`).join(', ')}; ` +
      'ratios are medians of per-round ratios'
  ]
}

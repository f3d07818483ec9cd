import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import sharp from 'sharp'

// The photo bench (node --import tsx bench/photos.ts [--seconds=N]): one service process on a fresh
// SQLite folder, measured for what issue 13 asks:
//   1. a 2 MB phone JPEG upload, answered with all three files stored: p50 over sequential uploads;
//   2. GET by id p99 alone, then beside 8 concurrent uploaders (the ratio), and the peak RSS;
//   3. photo files (thumb) served against GET by id, in requests a second.

const seconds = Number(process.argv.find((a) => a.startsWith('--seconds='))?.split('=')[1] ?? 10)
const PLANTS = 400
const ROOT = new URL('..', import.meta.url).pathname

async function phoneJpeg (): Promise<Buffer> {
  const w = 4032
  const h = 3024
  const raw = Buffer.alloc(w * h * 3)
  let seed = 7
  for (let i = 0; i < raw.length; i += 3) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    const x = (i / 3) % w
    const y = Math.floor(i / 3 / w)
    const n = (seed >> 16) & 15
    raw[i] = (x * 255 / w + n) & 255
    raw[i + 1] = (y * 255 / h + n) & 255
    raw[i + 2] = ((x ^ y) + n) & 255
  }
  return sharp(raw, { raw: { width: w, height: h, channels: 3 } }).jpeg({ quality: 88 }).withMetadata({ orientation: 6 }).toBuffer()
}

function peakMb (child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8')
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024)
}

async function load (url: string, path: () => string, connections = 8): Promise<{ rps: number, p99: number }> {
  const times: number[] = []
  const instances = Array.from({ length: connections }, () => {
    const instance = autocannon({ url, connections: 1, duration: seconds, requests: Array.from({ length: 512 }, () => ({ method: 'GET', path: path() })) })
    instance.on('response', (_c: unknown, status: number, _b: number, ms: number) => { if (status === 200) times.push(ms) })
    return instance
  })
  const results = await Promise.all(instances)
  times.sort((a, b) => a - b)
  return { rps: Math.round(results.reduce((n, r) => n + r['2xx'] / r.duration, 0)), p99: Math.round(times[Math.floor(times.length * 0.99)] * 1000) / 1000 }
}

async function main (): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'plants-bench-photos-'))
  const port = 18000 + Math.floor(Math.random() * 1000)
  const url = `http://127.0.0.1:${port}`
  const child = spawn(process.execPath, ['dist/src/server.js'], {
    cwd: ROOT, env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, stdio: 'inherit'
  })
  try {
    for (let i = 0; ; i++) {
      if ((await fetch(`${url}/healthz`).catch(() => undefined))?.ok) break
      if (i > 200) throw new Error('the service did not start')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const json = { 'content-type': 'application/json' }
    for (let i = 0; i < PLANTS; i++) await fetch(`${url}/v3/plant`, { method: 'POST', headers: json, body: JSON.stringify({ name: `plant ${i}` }) })
    const jpeg = await phoneJpeg()
    console.log(`picture: ${(jpeg.length / 1048576).toFixed(2)} MB JPEG, 4032×3024, orientation 6`)
    let next = 1
    const upload = async (): Promise<number> => {
      const started = performance.now()
      const res = await fetch(`${url}/v3/plant/${next++ % PLANTS + 1}/photos`, { method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: new Uint8Array(jpeg) })
      if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${await res.text()}`)
      await res.arrayBuffer()
      return performance.now() - started
    }

    // 1. One upload at a time.
    await upload()
    const alone: number[] = []
    for (let i = 0; i < 15; i++) alone.push(await upload())
    alone.sort((a, b) => a - b)
    console.log(`upload alone: p50 ${alone[7].toFixed(0)} ms, min ${alone[0].toFixed(0)}, max ${alone[14].toFixed(0)} (all three files stored)`)

    // 2. GET by id p99 alone, then beside 8 uploaders.
    const id = (): string => `/v3/plant/${1 + Math.floor(Math.random() * PLANTS)}`
    const base = await load(url, id)
    console.log(`GET by id alone: ${base.rps} req/s, p99 ${base.p99} ms`)
    let uploading = true
    let uploads = 0
    let busy = 0
    const uploaders = Array.from({ length: 8 }, async () => {
      while (uploading) {
        try { await upload(); uploads++ } catch (err) { if (/503/.test(String(err))) busy++; else throw err }
      }
    })
    const beside = await load(url, id)
    uploading = false
    await Promise.all(uploaders)
    console.log(`GET by id beside 8 uploaders: ${beside.rps} req/s, p99 ${beside.p99} ms (${(beside.p99 / base.p99).toFixed(2)}× alone); ` +
      `${uploads} uploads in ${seconds} s, ${busy} refused busy; peak RSS ${peakMb(child)} MB`)

    // 3. Photo files against GET by id.
    const plant = await (await fetch(`${url}/v3/plant/2`)).json() as { photos: Array<{ urls: Record<string, string> }> }
    const thumb = plant.photos[0].urls.thumb
    const files = await load(url, () => thumb)
    const again = await load(url, id)
    console.log(`thumb file: ${files.rps} req/s, p99 ${files.p99} ms; GET by id ${again.rps} req/s: ${(files.rps / again.rps).toFixed(2)}×`)
  } finally {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()

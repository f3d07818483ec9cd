import { readFileSync } from 'node:fs'
import { phonePictures } from './bench/photos.ts'
const base = 'http://127.0.0.1:8099'
const pics = await phonePictures(16)
for (let i = 0; i < 40; i++) await fetch(base + '/v3/plant', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'P' + i, status: 'available' }) })
const pid = Number(process.argv[2])
const kids = () => { try { return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number) } catch { return [] } }
const kb = (p: number, f: string) => { try { return Number(new RegExp(f + ':\\s+(\\d+)').exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0) >> 10 } catch { return 0 } }
const peak = { sa: 0, sr: 0, wa: 0, wr: 0 }
let tick = 0
const timer = setInterval(() => {
  if (++tick % 20 === 0) console.log("t", tick / 20, "service anon", kb(pid, "RssAnon"), "worker anon", kids().map(k => kb(k, "RssAnon")).join(","))
  peak.sa = Math.max(peak.sa, kb(pid, 'RssAnon')); peak.sr = Math.max(peak.sr, kb(pid, 'VmRSS'))
  for (const k of kids()) { peak.wa = Math.max(peak.wa, kb(k, 'RssAnon')); peak.wr = Math.max(peak.wr, kb(k, 'VmRSS')) }
}, 50)
let n = 0
const end = Date.now() + Number(process.argv[3] ?? 15) * 1000
const metric = async () => (await (await fetch(base + '/metrics')).text()).split('\n').filter(l => /^nodejs_(heap_size_used|external_memory)|^process_resident/.test(l)).join(' | ')
await Promise.all(Array.from({ length: Number(process.argv[4] ?? 8) }, async () => {
  while (Date.now() < end) {
    const i = n++
    const r = await fetch(`${base}/v3/plant/${i % 40 + 1}/photos`, { method: 'POST', headers: { 'content-type': 'image/jpeg' }, body: pics[i % 16] })
    await r.arrayBuffer()
  }
}))
clearInterval(timer)
console.log('uploads', n, 'peak service anon', peak.sa, 'rss', peak.sr, 'worker anon', peak.wa, 'rss', peak.wr)
console.log(await metric())

import { readFileSync } from 'node:fs'
import { Client } from 'undici'
const urls = JSON.parse(readFileSync('/tmp/exp/urls.json', 'utf8')) as string[]
const paths = process.argv[2] === 'get' ? Array.from({ length: 40 }, (_, i) => `/v3/plant/${i + 1}`) : urls
let ok = 0
const end = Date.now() + 5000
await Promise.all(Array.from({ length: 10 }, async () => {
  const c = new Client('http://127.0.0.1:8099')
  while (Date.now() < end) { const r = await c.request({ path: paths[Math.floor(Math.random() * paths.length)], method: 'GET' }); await r.body.dump(); if (r.statusCode === 200) ok++ }
  await c.close()
}))
console.log(process.argv[2], ok / 5, 'req/s')

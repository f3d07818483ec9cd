import assert from 'node:assert/strict'
import { test } from 'node:test'
import { redactUrl } from '../../src/http/logging/redact-url.js'
import { send, startService } from '../helpers/process.js'

test('key-like query parameters are redacted from a URL, everything else is kept as sent', () => {
  assert.equal(redactUrl('/v3/plant?api_key=s3cret&limit=5'), '/v3/plant?api_key=[redacted]&limit=5')
  assert.equal(redactUrl('/v3/plant?tag=a&apikey=x&access_token=y&X-Amz-Signature=z&key&cursor=abc'),
    '/v3/plant?tag=a&apikey=[redacted]&access_token=[redacted]&X-Amz-Signature=[redacted]&key=[redacted]&cursor=abc')
  // A name hidden behind percent-encoding is still a key.
  assert.equal(redactUrl('/v3/plant?api%5Fkey=s3cret'), '/v3/plant?api%5Fkey=[redacted]')
  assert.equal(redactUrl('/v3/plant?monkey=1&limit=2'), '/v3/plant?monkey=1&limit=2')
  assert.equal(redactUrl('/v3/plant/12'), '/v3/plant/12')
})

test('a request with ?api_key= is logged at debug with the key redacted', async (t) => {
  const service = await startService({ env: { LOG_LEVEL: 'debug' } })
  t.after(async () => { await service.stop() })
  // A key in an operation's URL is refused (401); a probe ignores it, and its line shows the URL, where a key would show.
  const refused = await send(service.url, { method: 'GET', path: '/v3/plant?limit=5&api_key=sekrit-4242', headers: { 'x-request-id': 'redaction-refused' } })
  assert.equal(refused.status, 401)
  const res = await send(service.url, { method: 'GET', path: '/healthz?probe=1&api_key=sekrit-4242&access_token=tok-9191', headers: { 'x-request-id': 'redaction-check' } })
  assert.equal(res.status, 200)
  let line: Record<string, unknown> | undefined
  for (let i = 0; i < 50 && line === undefined; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    line = service.output().split('\n').filter((l) => l.includes('redaction-check')).map((l) => JSON.parse(l)).find((l) => l.url !== undefined)
  }
  assert.ok(line, service.output())
  assert.equal(line.url, '/healthz?probe=1&api_key=[redacted]&access_token=[redacted]')
  assert.doesNotMatch(service.output(), /sekrit-4242|tok-9191/)
})

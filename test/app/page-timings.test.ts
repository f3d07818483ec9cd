import assert from 'node:assert/strict'
import { test } from 'node:test'
import { timing } from '../../web/dom.js'

// The page's waits (web/dom.ts): staff get the defaults; only a test sets others, through
// `window.plantsTimings` (test/helpers/staff-page.ts), and what it sets is read at each wait.

const page = globalThis as { window?: { plantsTimings?: unknown } }

test('the page waits as staff need unless told otherwise, and takes only a number of 0 or more from a test', (t) => {
  page.window = {}
  t.after(() => { delete page.window })
  assert.deepEqual(['holdEmptyMs', 'refreshMs', 'settleMs', 'liveRetryMs', 'retryMs'].map((name) => timing(name as Parameters<typeof timing>[0])),
    [500, 150, 400, 2000, 1000])

  page.window.plantsTimings = { holdEmptyMs: 20, settleMs: 0 }
  assert.equal(timing('holdEmptyMs'), 20)
  assert.equal(timing('settleMs'), 0)
  assert.equal(timing('liveRetryMs'), 2000, 'a wait the test did not set keeps its default')

  page.window.plantsTimings = { holdEmptyMs: -1, settleMs: '5', liveRetryMs: Number.NaN, retryMs: Infinity }
  assert.deepEqual([timing('holdEmptyMs'), timing('settleMs'), timing('liveRetryMs'), timing('retryMs')], [500, 400, 2000, 1000])
})

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { oneATurn } from '../../src/http/limits/event-loop-queue.js'

// Batch bodies (and their answers' slices) that arrive together run one per turn of the event loop
// (src/http/limits/event-loop-queue.ts), so timers and other sockets are served between them.

test('work queued together runs in order, one piece per turn of the event loop', async () => {
  const inTurn = oneATurn()
  let turn = 0
  let ticking = true
  const tick = (): void => { if (ticking) { turn++; setImmediate(tick) } }
  setImmediate(tick)
  const ran: Array<[string, number]> = []
  const done = new Promise<void>((resolve) => {
    inTurn(() => { ran.push(['a', turn]) })
    inTurn(() => { ran.push(['b', turn]) })
    inTurn(() => { ran.push(['c', turn]) })
    inTurn(() => { ran.push(['d', turn]); resolve() })
  })
  await done
  ticking = false
  assert.deepEqual(ran.map(([name]) => name), ['a', 'b', 'c', 'd'])
  const turns = ran.map(([, t]) => t)
  for (let i = 1; i < turns.length; i++) assert.ok(turns[i] > turns[i - 1], `pieces ran in turns ${turns.join(', ')}`)
})

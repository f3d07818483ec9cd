import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import { test } from 'node:test'

/** Starts the real server process on DATA_DIR and resolves with its base URL once it listens. */
async function startServer (dataDir: string): Promise<{ child: ChildProcess, base: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  // Keep reading stdout for the process's whole life: a closed pipe would break its logging.
  return new Promise((resolve, reject) => {
    let output = ''
    child.stdout!.on('data', (chunk) => {
      output += String(chunk)
      const match = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match) resolve({ child, base: match[1] })
    })
    child.once('exit', (code) => reject(new Error(`server exited with ${code} before listening: ${output}`)))
  })
}

test('SIGKILL during concurrent writes loses no acknowledged write', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'plants-durability-'))
  const { child, base } = await startServer(dataDir)
  const acknowledged = new Map<number, string>()
  let stop = false
  let killed = false
  const writer = async (w: number): Promise<void> => {
    for (let i = 0; !stop; i++) {
      const name = `w${w}-${i}`
      try {
        const res = await fetch(`${base}/v3/plant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, tags: [`w${w}`] }) })
        if (res.status !== 200) throw new Error(`unexpected ${res.status}`)
        const plant = await res.json() as { id: number }
        // An answer received after the kill was still written before it: it counts as acknowledged too.
        acknowledged.set(plant.id, name)
        if (i % 3 === 2) {
          const renamed = `${name}-renamed`
          const put = await fetch(`${base}/v3/plant`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: plant.id, name: renamed }) })
          if (put.status === 200) acknowledged.set(plant.id, renamed)
        }
      } catch (err) {
        if (!killed) throw err
        return
      }
    }
  }
  const writers = Array.from({ length: 16 }, (_, w) => writer(w))
  while (acknowledged.size < 300) await new Promise((resolve) => setTimeout(resolve, 10))
  killed = true
  child.kill('SIGKILL')
  stop = true
  await Promise.all(writers)
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit')
  assert.ok(acknowledged.size >= 300)

  const restarted = await startServer(dataDir)
  try {
    let found = 0
    for (const [id, name] of acknowledged) {
      const res = await fetch(`${restarted.base}/v3/plant/${id}`)
      assert.equal(res.status, 200, `acknowledged plant ${id} is missing after SIGKILL`)
      assert.equal(((await res.json()) as { name: string }).name, name, `plant ${id} lost its acknowledged update`)
      found++
    }
    assert.equal(found, acknowledged.size)
  } finally {
    restarted.child.kill('SIGTERM')
    await once(restarted.child, 'exit')
  }
})

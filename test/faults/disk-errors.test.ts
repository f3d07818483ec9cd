import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { inspectDatabase, send, startService, tempDir, type Answer, type ServiceProcess } from '../helpers/process.js'

// Disk errors at commit, injected into the running service with strace (attach = fault on,
// detach = fault cleared): writes get 503 in the contract's shape, never a false 2xx, reads go on,
// and the service takes writes again by itself once the disk is back.

const STRACE = '/usr/bin/strace'
const ROUNDS = Math.max(1, Math.ceil(Number(process.env.FAULT_ROUNDS ?? 20) / 5))

interface Fault { injected (): number, detach (): Promise<void> }

/** Attaches strace to `pid`, failing `syscall` as `inject` says, until detach. */
async function injectFault (pid: number, inject: string, log: string): Promise<Fault> {
  const strace = spawn(STRACE, ['-f', '-o', log, '-e', `trace=${inject.split(':')[0]}`, '-e', `inject=${inject}`, '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  strace.stderr.on('data', (b: Buffer) => { stderr += b.toString() })
  const gone = new Promise<void>((resolve) => strace.once('exit', () => resolve()))
  const attached = new Promise<boolean>((resolve) => {
    strace.stderr.on('data', () => { if (stderr.includes(`Process ${pid} attached`)) resolve(true) })
    void gone.then(() => resolve(false))
  })
  if (!await attached) throw new Error(`strace could not attach: ${stderr.trim()}`)
  return {
    injected: () => existsSync(log) ? (readFileSync(log, 'utf8').match(/\(INJECTED\)/g) ?? []).length : 0,
    detach: async () => { strace.kill('SIGINT'); await gone }
  }
}

/** Why these tests cannot run here, or false. */
async function unavailable (): Promise<string | false> {
  if (!existsSync(STRACE)) return `${STRACE} is not installed`
  const probe = spawn(STRACE, ['-f', '-o', '/dev/null', '-e', 'inject=getpid:error=EIO', 'true'], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  probe.stderr.on('data', (b: Buffer) => { stderr += b.toString() })
  const code = await new Promise<number | null>((resolve) => probe.once('exit', resolve))
  return code === 0 ? false : `strace cannot trace here (ptrace refused?): ${stderr.trim()}`
}

function assertStorageUnavailable (res: Answer, what: string): void {
  assert.equal(res.status, 503, `${what}: a write during the disk fault answered ${res.status} ${res.body}`)
  assert.match(String(res.headers['content-type']), /^application\/json/)
  assert.ok(Number(res.headers['retry-after']) > 0, `${what}: Retry-After`)
  const body = res.json()
  assert.deepEqual(Object.keys(body).sort(), ['detail', 'requestId', 'status', 'title', 'type'])
  assert.match(body.type, /\/storage-unavailable$/)
  assert.equal(body.status, 503)
  assert.equal(body.requestId, res.headers['x-request-id'])
  assert.doesNotMatch(res.body, /sqlite|SQLITE|\.ts:|\/work\/|at /, 'no storage internals reach the client')
}

async function listAll (base: string): Promise<Array<Record<string, unknown>>> {
  const res = await send(base, { method: 'GET', path: '/v3/plant?limit=500' })
  assert.equal(res.status, 200)
  return res.json().items
}

const FAULTS = [
  { name: 'fsync fails with EIO (a disk error at commit)', inject: 'fsync:error=EIO' },
  { name: 'pwrite64 fails with ENOSPC (the disk is full)', inject: 'pwrite64:error=ENOSPC' }
]

const reason = await unavailable()

describe('disk errors at commit', { skip: reason }, () => {
  let total = 0
  for (const fault of FAULTS) {
    test(`${fault.name}: writes get 503, never a false 2xx; reads go on; writes succeed again once it clears (${ROUNDS} rounds)`, async (t) => {
      const dir = tempDir('plants-disk')
      t.after(dir.remove)
      let service: ServiceProcess | undefined = await startService({ dataDir: dir.path })
      t.after(async () => { await service?.stop('SIGKILL') })
      const base = service.url
      const baseline = []
      for (let i = 0; i < 5; i++) baseline.push((await send(base, { method: 'POST', path: '/v3/plant', body: { name: `kept-${i}`, tags: ['kept'] } })).json())
      for (let round = 0; round < ROUNDS; round++) {
        const before = await listAll(base)
        const injection = await injectFault(service.pid, fault.inject, join(dir.path, `strace-${round}.log`))
        // Concurrent writes of every kind: they share commits, so one failed fsync fails a whole group.
        const writes = await Promise.all([
          ...Array.from({ length: 8 }, (_, i) => send(base, { method: 'POST', path: '/v3/plant', body: { name: `lost-${round}-${i}` } })),
          ...baseline.map((p) => send(base, { method: 'PUT', path: '/v3/plant', body: { id: p.id, name: `lost-update-${round}` } })),
          send(base, { method: 'DELETE', path: `/v3/plant/${baseline[0].id}` })
        ])
        writes.forEach((res, i) => assertStorageUnavailable(res, `round ${round} write ${i}`))
        // Reads need no commit: the catalogue stays readable during the fault.
        assert.deepEqual(await listAll(base), before)
        const injected = injection.injected()
        await injection.detach()
        assert.ok(injected > 0, 'strace injected no fault')
        total += injected
        // Cleared: the service takes writes again by itself, without a restart (bounded wait).
        let recovered: Answer | undefined
        for (let attempt = 0; attempt < 50 && recovered?.status !== 200; attempt++) {
          if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 200))
          recovered = await send(base, { method: 'POST', path: '/v3/plant', body: { name: `recovered-${round}` } })
        }
        assert.equal(recovered?.status, 200, `no recovery after the fault cleared: ${recovered?.body}`)
        // Nothing answered 503 took effect.
        const after = await listAll(base)
        assert.deepEqual(after.filter((p) => String(p.name).startsWith('lost')), [])
        assert.deepEqual(after.slice(0, before.length), before)
        t.diagnostic(`round ${round}: ${injected} ${fault.inject.split(':')[0]} calls failed, ${writes.length} writes answered 503, recovered`)
      }
      const exit = await service.stop('SIGTERM')
      service = undefined
      assert.deepEqual(exit, { code: 0, signal: null })
      assert.equal(inspectDatabase(dir.path).integrity, 'ok')
      t.diagnostic(`faults injected so far: ${total}`)
    })
  }

  test('a write answered 503 after a failed fsync does not take effect after a crash either', {
    todo: 'known gap: SQLite wrote the failed commit\'s WAL frames before its fsync failed; after kill -9 the WAL ' +
      'recovery replays them, so the last write answered 503 reappears. Clients must retry with an Idempotency-Key.'
  }, async (t) => {
    const dir = tempDir('plants-disk-crash')
    t.after(dir.remove)
    const service = await startService({ dataDir: dir.path })
    t.after(async () => { await service.stop('SIGKILL') })
    assert.equal((await send(service.url, { method: 'POST', path: '/v3/plant', body: { name: 'kept' } })).status, 200)
    const injection = await injectFault(service.pid, 'fsync:error=EIO', join(dir.path, 'strace.log'))
    assertStorageUnavailable(await send(service.url, { method: 'POST', path: '/v3/plant', body: { name: 'answered-503' } }), 'the write')
    await injection.detach()
    await service.stop('SIGKILL')
    const names = [...inspectDatabase(dir.path).plants.values()].map((p) => p.name)
    assert.deepEqual(names, ['kept'])
  })
})

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { execFileSync } from 'node:child_process'
import { built, ROOT, send, startService } from '../helpers/process.js'

// The README's first command, as a newcomer runs it in a checkout: `npm start` (its prestart finds
// the build current, so nothing is built here), on the embedded database.

test('npm start in a checkout serves the catalogue from the build, and SIGTERM stops it cleanly', async (t) => {
  built('dist/bundle/server.js') // current: npm start would otherwise build in place, under the tests beside this one
  const service = await startService({ command: ['npm', ['start', '--silent']], env: { LOG_LEVEL: 'info' } })
  // Whatever happens, nothing is left running.
  t.after(async () => {
    for (const pid of descendants(service.pid)) process.kill(pid, 'SIGKILL')
    await service.stop('SIGKILL')
  })
  try {
    const created = await send(service.url, { method: 'POST', path: '/v3/plant', body: { name: 'Monstera' } })
    assert.equal(created.status, 200, created.body)
    const version = (await send(service.url, { method: 'GET', path: '/v3/version' })).json()
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    assert.deepEqual([version.version, version.engine], [pkg.version, 'sqlite'])
  } finally {
    // The signal goes to the service itself, as systemd or a terminal's Ctrl-C sends it to the
    // whole group; npm does not pass it on to the script it runs.
    const server = descendants(service.pid).filter((pid) => {
      const [command, script] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      return command.endsWith('node') && script === 'dist/bundle/server.js'
    })
    assert.equal(server.length, 1, 'npm runs one service process')
    process.kill(server[0], 'SIGTERM')
  }
  assert.equal((await service.exited).code, 0, service.output())
  assert.doesNotMatch(service.output(), /building/, 'nothing was built')
  assert.match(service.output(), /"msg":"stopped"/)
})

/** The processes started by `pid`, and theirs. */
function descendants (pid: number): number[] {
  let children: number[]
  try {
    children = execFileSync('pgrep', ['-P', String(pid)]).toString().trim().split('\n').filter(Boolean).map(Number)
  } catch {
    return [] // pgrep exits 1 when there are none
  }
  return children.flatMap((child) => [child, ...descendants(child)])
}

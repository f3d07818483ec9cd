import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'

// Ctrl-C during a long step (an import's bar on a terminal, or plain lines in a log): the terminal
// gets its cursor and line wrapping back, the operator is told how far it got and what to do, and
// the process ends as the signal ends it. Run in a child: the signal ends the process it reaches.

const script = (tty: boolean, signal: string) => `
  import { Writable } from 'node:stream'
  import { startProgress } from './src/cli/progress.ts'
  const stderr = Object.assign(new Writable({ write (chunk, _enc, done) { process.stderr.write(chunk); done() } }), { isTTY: ${tty}, columns: 100, cursorTo () { return true }, clearLine () { return true }, moveCursor () { return true } })
  const progress = startProgress({ stdout: process.stdout, stderr }, 'importing rows.csv', 10000, { afterwards: 'run it again to finish' })
  progress.update(3000)
  setTimeout(() => process.kill(process.pid, '${signal}'), 50)
  setTimeout(() => { progress.stop(); process.stderr.write('not interrupted') }, 5000)
`

for (const [tty, signal] of [[true, 'SIGINT'], [false, 'SIGTERM']] as const) {
  test(`${signal} during a step's progress (${tty ? 'a terminal' : 'a log'}): the terminal put back, how far it got said, the process ended by the signal`, () => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script(tty, signal)], { encoding: 'utf8', timeout: 20_000 })
    assert.equal(child.signal, signal, child.stderr)
    assert.match(child.stderr, /importing rows\.csv: interrupted near row 3,000; run it again to finish\n/)
    assert.ok(!child.stderr.includes('not interrupted'))
    // cli-progress hid the cursor and turned wrapping off; both are turned back on before the message.
    if (tty) assert.ok(child.stderr.includes('\u001b[?25h') && child.stderr.includes('\u001b[?7h'), JSON.stringify(child.stderr))
  })
}

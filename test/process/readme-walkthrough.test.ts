import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { test } from 'node:test'
import { listenOn } from '../../scripts/lib/listening-service.js'

// The README's curl walkthrough is run as written, top to bottom, against a started service: only
// the base address `B` is pointed at the test's port. Each command's `# →` line says what it answers
// (`…` stands for what is left out); a README edit that breaks the story fails here.

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
const BASE_LINE = 'B=http://127.0.0.1:8080/v3'
const HAS_CURL = spawnSync('curl', ['--version']).status === 0

interface Step { command: string, expected: string }

/**
 * The walkthrough's commands with what each answers: the README's sh block that starts with
 * BASE_LINE and every sh block after it up to the next heading (the blocks a reader pastes in turn).
 */
export function walkthrough (readme: string): Step[] {
  const start = readme.indexOf('```sh\n' + BASE_LINE + '\n')
  assert.ok(start >= 0, `the README has a sh block starting with ${BASE_LINE}`)
  const heading = readme.slice(start).search(/^#{2,6} /m) // a heading; a shell comment has one #
  const section = heading < 0 ? readme.slice(start) : readme.slice(start, start + heading)
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1])
  const lines = blocks.join('\n').replace(/\\\n\s*/g, '').split('\n').filter((l) => l.trim() !== '' && l !== BASE_LINE)
  const steps: Array<{ command: string, expected?: string }> = []
  for (const line of lines) {
    const arrow = /^#\s*→\s*(.*)$/.exec(line.trim())
    if (arrow) {
      const last = steps.at(-1)
      assert.ok(last && last.expected === undefined, `"${line}" follows a command that has no answer shown yet`)
      last.expected = arrow[1]
    } else if (!line.startsWith('#')) {
      const [command, expected] = line.split(/\s+#\s*→\s*/)
      steps.push({ command: command.replace(/\s+#.*$/, '').trim(), expected })
    }
  }
  for (const step of steps) assert.ok(step.expected, `the README shows what \`${step.command}\` answers (a # → line)`)
  return steps as Step[]
}

const normal = (s: string): string => s.replace(/\s+/g, ' ').toLowerCase()

/** How far `output` matches the pieces of `expected` (split at …), in order; true when all do. */
function matches (output: string, expected: string): boolean {
  const text = normal(output)
  let at = 0
  for (const piece of expected.split('…').map((p) => normal(p).trim()).filter(Boolean)) {
    const found = text.indexOf(piece, at)
    if (found < 0) return false
    at = found + piece.length
  }
  return true
}

/** Runs one command in bash with B set; a command that keeps streaming (the event stream) is stopped once it has said what was expected. */
function run (step: Step, base: string): Promise<{ output: string, ok: boolean, code: number | null }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', step.command], { env: { ...process.env, B: base }, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    let done = false
    const finish = (code: number | null) => {
      if (done) return
      done = true
      resolve({ output, ok: matches(output, step.expected), code })
    }
    child.stdout.on('data', (b: Buffer) => {
      output += b.toString()
      if (matches(output, step.expected)) {
        child.kill()
        finish(0)
      }
    })
    child.stderr.on('data', (b: Buffer) => { output += b.toString() })
    child.on('close', (code) => finish(code))
  })
}

test('the README walkthrough shows what every command answers, in each of its blocks, and covers POST, PUT, PATCH, DELETE and GET', () => {
  const steps = walkthrough(README)
  assert.ok(steps.length >= 10)
  const methods = steps.map((s) => /-X (\w+)/.exec(s.command)?.[1] ?? 'GET')
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'GET']) assert.ok(methods.includes(method), `the walkthrough shows ${method}`)
  assert.ok(steps.some((s) => s.command.includes('/store/inventory')), 'the second block ("Finding plants, changing one field, counting") is run too')
  assert.ok(steps.some((s) => s.command.includes('/stock/movements') && s.command.includes('Idempotency-Key')), 'the stock block (a location, a delivery, a sale) is run too')
})

test('the README and the documents shipped beside it speak in the package\'s own words: none sends a reader outside the repository', () => {
  const shipped = ['SECURITY.md', ...readdirSync(new URL('../../docs/', import.meta.url)).filter((n) => n.endsWith('.md')).map((n) => `docs/${n}`)]
  for (const name of shipped) {
    assert.doesNotMatch(readFileSync(new URL(`../../${name}`, import.meta.url), 'utf8'), /\bseed\b|\.\.\/shared|CONTRACT\.md/i, name)
  }
  const pointers = README.split('\n').filter((line) => /\bseed\b|\.\.\/shared|CONTRACT\.md/i.test(line))
  assert.deepEqual(pointers, [], 'README lines that send a reader to documents the package lacks')
})

test('the README walkthrough runs top to bottom, as written, against a started service', {
  skip: HAS_CURL ? false : 'curl is not installed',
  timeout: 60_000
}, async (t) => {
  const service = await listenOn(':memory:')
  t.after(() => service.close())
  for (const step of walkthrough(README)) {
    const { output, ok, code } = await run(step, `${service.url}/v3`)
    assert.ok(ok, `README: \`${step.command}\`\n  shows:   ${step.expected}\n  answered: ${output.trim()}`)
    assert.equal(code, 0, `\`${step.command}\` exited with ${code}`)
  }
})

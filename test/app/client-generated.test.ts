import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { relative } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { CLIENT_TYPES_FILE, renderClientTypes, servedDocument } from '../../scripts/openapi-document.js'

test('the generated client matches the OpenAPI document the service serves (else run npm run client:generate)', async () => {
  const expected = await renderClientTypes(await servedDocument())
  const actual = await readFile(CLIENT_TYPES_FILE, 'utf8')
  if (actual !== expected) {
    const a = actual.split('\n')
    const e = expected.split('\n')
    const line = a.findIndex((l, i) => l !== e[i])
    assert.fail(`src/client/generated/openapi.d.ts is stale against /v3/openapi.json (first difference at line ${line + 1}:\n` +
      `  file:      ${a[line] ?? '(end of file)'}\n  document:  ${e[line] ?? '(end of file)'}).\n` +
      'Regenerate it with `npm run client:generate` and commit the result.')
  }
})

test('the generated client is marked generated for diffs and left out of lint', () => {
  const file = fileURLToPath(CLIENT_TYPES_FILE)
  const attribute = execFileSync('git', ['check-attr', 'linguist-generated', '--', relative(process.cwd(), file)], { encoding: 'utf8' })
  assert.match(attribute, /: linguist-generated: true$/m)
  // ESLint's own command, as `npm run lint` runs it: an ignored file it is named gets one warning saying so.
  const eslint = fileURLToPath(new URL('../../node_modules/eslint/bin/eslint.js', import.meta.url))
  const [report] = JSON.parse(execFileSync(process.execPath, [eslint, '--format', 'json', file], { encoding: 'utf8' })) as Array<{ messages: Array<{ message: string }> }>
  assert.match(report.messages[0]?.message ?? '', /ignored/)
})

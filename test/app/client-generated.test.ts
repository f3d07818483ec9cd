import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { test } from 'node:test'
import { CLIENT_TYPES_FILE, renderClientTypes, servedDocument } from '../../scripts/openapi-document.js'

test('the generated client matches the OpenAPI document the service serves (else run npm run client:generate)', async () => {
  const expected = await renderClientTypes(await servedDocument())
  const actual = await readFile(CLIENT_TYPES_FILE, 'utf8')
  if (actual !== expected) {
    const a = actual.split('\n')
    const e = expected.split('\n')
    const line = a.findIndex((l, i) => l !== e[i])
    assert.fail(`src/client/openapi.ts is stale against /v3/openapi.json (first difference at line ${line + 1}:\n` +
      `  file:      ${a[line] ?? '(end of file)'}\n  document:  ${e[line] ?? '(end of file)'}).\n` +
      'Regenerate it with `npm run client:generate` and commit the result.')
  }
})

import { writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { CLIENT_TYPES_FILE, renderClientTypes, servedDocument } from './openapi-document.js'

const source = await renderClientTypes(await servedDocument())
await writeFile(CLIENT_TYPES_FILE, source)
process.stdout.write(`wrote ${fileURLToPath(CLIENT_TYPES_FILE)} (${source.length} bytes)\n`)

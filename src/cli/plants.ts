#!/usr/bin/env node
import { main } from './main.js'

// The `plants` executable (package bin, or `node --import tsx src/cli/plants.ts` in development).
main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env })
  .then((code) => { process.exitCode = code })
  .catch((err) => {
    process.stderr.write(`plants: ${err instanceof Error ? err.stack : String(err)}\n`)
    process.exitCode = 1
  })

#!/usr/bin/env node
// The package's `plants` command, also `npx plants …` in a checkout: there it builds first when the
// build is missing or older than the sources, as `npm start` does (an installed package has no
// sources, and goes straight on).
await import('../scripts/ensure-build.mjs')
await import('../dist/src/cli/plants.js')

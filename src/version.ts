import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

// The release this code belongs to, read from the package's own package.json: one folder up from
// src/ in a checkout, two up from dist/src/ once built and installed. Found by walking up, so the
// same module works from either place without copying package.json into the build.
function readPackageVersion (): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string, version?: string }
      if (pkg.name === 'plant-catalogue' && typeof pkg.version === 'string') return pkg.version
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
    const parent = dirname(dir)
    if (parent === dir) throw new Error('the package.json of plant-catalogue was not found above its code')
    dir = parent
  }
}

/** The package's version: what `--version` prints and /v3/version reports (the API's own version is the OpenAPI info.version). */
export const PACKAGE_VERSION = readPackageVersion()

import assert from 'node:assert/strict'
import { readdir, readFile } from 'node:fs/promises'
import { before, test } from 'node:test'
import Fastify from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { PAGE_CSP, pageDirectory, pageRoutes } from '../../src/page/page-routes.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { pageBuilt } from '../helpers/staff-page.js'

// How the service serves the staff page, without a browser: headers, caching, what is not served,
// and the rules the page's sources keep (no markup from strings, nothing inline).

before(() => pageBuilt())

async function service (t: import('node:test').TestContext, apiKeys: string[] = []) {
  const store = openSqliteStore({ dataDir: ':memory:', feedRetentionMs: 86_400_000 })
  const app = await buildApp(testConfig({ apiKeys }), { store })
  t.after(async () => {
    await app.close()
    await store.close()
  })
  return app
}

test('GET / serves the page with a strict CSP, nosniff and revalidation; its assets have their types; a matching ETag is 304', async (t) => {
  const app = await service(t)
  const res = await app.inject({ method: 'GET', url: '/' })
  assert.equal(res.statusCode, 200)
  assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
  assert.equal(res.headers['content-security-policy'], PAGE_CSP)
  assert.match(PAGE_CSP, /^default-src 'self';/)
  assert.equal(res.headers['x-content-type-options'], 'nosniff')
  assert.equal(res.headers['cache-control'], 'no-cache')
  assert.match(res.body, /<html lang="en" data-write-key="none">/)
  const again = await app.inject({ method: 'GET', url: '/', headers: { 'if-none-match': String(res.headers.etag) } })
  assert.equal(again.statusCode, 304)
  assert.equal(again.body, '')
  assert.equal((await app.inject({ method: 'HEAD', url: '/' })).statusCode, 200)

  for (const [file, type] of [['main.js', 'text/javascript; charset=utf-8'], ['style.css', 'text/css; charset=utf-8'], ['favicon.svg', 'image/svg+xml']]) {
    const asset = await app.inject({ method: 'GET', url: `/page/${file}` })
    assert.equal(asset.statusCode, 200, file)
    assert.equal(asset.headers['content-type'], type)
    assert.ok(asset.body.length > 0)
  }
})

test('with API keys configured the page is told to ask for one before the first write', async (t) => {
  const app = await service(t, ['k'])
  assert.match((await app.inject({ method: 'GET', url: '/' })).body, /data-write-key="required"/)
})

test('unknown page files, index.html under /page and the page in the OpenAPI document are not served', async (t) => {
  const app = await service(t)
  for (const url of ['/page/nope.js', '/page/index.html', '/page/..%2Fsrc%2Fapp.ts', '/page/tsconfig.json']) {
    const res = await app.inject({ method: 'GET', url })
    assert.equal(res.statusCode, 404, url)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    assert.match(res.json().type, /route-not-found$/)
  }
  const doc = (await app.inject({ method: 'GET', url: '/v3/openapi.json' })).json()
  assert.deepEqual(Object.keys(doc.paths).filter((p) => !p.startsWith('/v3') && !['/healthz', '/readyz', '/metrics'].includes(p)), [])
})

test('a service whose page is not built still starts, and / is a JSON 404', async (t) => {
  const app = Fastify()
  t.after(() => app.close())
  await app.register(pageRoutes, { dir: undefined, secured: false })
  assert.equal((await app.inject({ method: 'GET', url: '/' })).statusCode, 404)
  assert.ok(pageDirectory(), 'the built page is found from sources')
})

test('the page sources never turn strings into markup and the page has nothing inline', async () => {
  const web = new URL('../../web/', import.meta.url)
  for (const name of (await readdir(web)).filter((n) => n.endsWith('.ts'))) {
    const source = await readFile(new URL(name, web), 'utf8')
    assert.doesNotMatch(source, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|createContextualFragment|\beval\(|new Function/, name)
  }
  const html = await readFile(new URL('static/index.html', web), 'utf8')
  // Every module main.js imports is preloaded beside it, so the page loads in one round trip of
  // scripts; a module imported only when a part is opened (import('./admin.js')) is neither
  // preloaded nor imported by the first load, so it costs the first load nothing. An `import type`
  // is erased by tsc: it loads nothing.
  const sources = new Map<string, string>()
  for (const name of (await readdir(web)).filter((n) => n.endsWith('.ts'))) sources.set(name.replace(/\.ts$/, '.js'), await readFile(new URL(name, web), 'utf8'))
  const staticImports = (module: string): string[] => [...(sources.get(module) ?? '').matchAll(/^import (?!type )[^;]*? from '\.\/([\w-]+\.js)'/gm)].map((m) => m[1])
  const firstLoad = new Set(['main.js'])
  for (const module of firstLoad) for (const imported of staticImports(module)) firstLoad.add(imported)
  const lazy = new Set([...sources.values()].flatMap((source) => [...source.matchAll(/\bimport\('\.\/([\w-]+\.js)'\)/g)].map((m) => m[1])))
  assert.ok(lazy.has('admin.js'), 'the manager\'s settings are imported when opened')
  assert.ok(lazy.has('history-editor.js') && lazy.has('trash-history.js'), 'a plant\'s history is imported when opened')
  for (const module of sources.keys()) {
    const preload = new RegExp(`<link rel="modulepreload" href="/page/${module}">`)
    if (module === 'main.js') continue
    if (firstLoad.has(module)) {
      assert.ok(!lazy.has(module), `${module} is imported by the first load, so importing it later saves nothing`)
      assert.match(html, preload, module)
    } else {
      assert.doesNotMatch(html, preload, `${module} is not preloaded: only a part opened later needs it`)
    }
  }
  // Nothing is left out of both: every module is reached by the first load or through a later import.
  const reached = new Set([...firstLoad, ...lazy])
  for (const module of reached) for (const imported of staticImports(module)) reached.add(imported)
  assert.deepEqual([...sources.keys()].filter((m) => !reached.has(m)), [])
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)/, 'every script has a src')
  assert.doesNotMatch(html, /\son[a-z]+=|\sstyle=|<style/, 'no inline handlers or styles')
})

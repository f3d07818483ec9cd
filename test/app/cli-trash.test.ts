import assert from 'node:assert/strict'
import { userInfo } from 'node:os'
import { describe, test } from 'node:test'
import { plants } from '../../scripts/lib/cli-harness.js'
import { CLI_TARGETS } from '../helpers/cli-targets.js'

// `plants trash list|purge` on the catalogue's own database.

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

for (const [where, target] of Object.entries(CLI_TARGETS)) {
  describe(`plants trash (${where})`, { skip: target.skip }, () => {
    test('list shows the deleted plants newest first (--json: as GET /v3/trash shows them); purge removes one for good and writes the service\'s log line', async (t) => {
      const { env, args, open } = await target.make(t)
      const store = await open()
      for (const name of ['Monstera', 'Fern', 'Cactus']) await store.create({ name, category: null, tags: [], status: 'available' })
      await store.remove(1, undefined, { actor: 'till-3' })
      await store.remove(3)
      await store.close()
      assert.equal((await plants(['trash', 'list', '--json', ...args], env)).code, 0)

      const listed = await plants(['trash', 'list', ...args], env)
      assert.equal(listed.code, 0, listed.stderr)
      const lines = listed.stdout.trimEnd().split('\n')
      assert.match(lines[0], /^ID +NAME +DELETED +BY +PURGED BY ITSELF AT$/)
      assert.match(lines[1], /^3 +Cactus +\S+Z +\S+ +\S+Z$/)
      assert.match(lines[2], /^1 +Monstera +\S+Z +till-3 +\S+Z$/)
      assert.equal(lines.length, 3)

      const json = JSON.parse((await plants(['trash', 'list', '--json', ...args], env)).stdout) as Array<Record<string, any>>
      assert.deepEqual(json.map((e) => [e.id, e.plant.id, e.plant.name, e.trashedBy, typeof e.version]), [[3, 3, 'Cactus', json[0].trashedBy, 'number'], [1, 1, 'Monstera', 'till-3', 'number']])
      assert.ok(json.every((e) => ISO.test(e.trashedAt) && ISO.test(e.plant.updatedAt)))
      assert.deepEqual(Object.keys(json[0]).sort(), ['id', 'plant', 'purgeAt', 'trashedAt', 'trashedBy', 'version'])

      const purged = await plants(['trash', 'purge', '1', ...args], env)
      assert.equal(purged.code, 0, purged.stderr)
      assert.equal(purged.stdout, 'purged plant 1 from the trash, for good\n')
      const [line, ...more] = purged.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
      assert.deepEqual(more, [])
      assert.deepEqual({ level: line.level, msg: line.msg, key: line.key, plant: line.plant, user: line.user }, { level: 'info', msg: 'plant purged from the trash', key: 'cli', plant: 1, user: userInfo().username })
      assert.match(line.time, ISO)
      assert.deepEqual(JSON.parse((await plants(['trash', 'list', '--json', ...args], env)).stdout).map((e: { id: number }) => e.id), [3])

      for (const id of ['1', '2']) {
        const refused = await plants(['trash', 'purge', id, ...args], env)
        assert.deepEqual([refused.code, refused.stderr.split('\n')[0]], [1, `plants trash: no plant ${id} in the trash (never deleted, restored, or purged already; plants trash list shows it)`])
        assert.ok(!refused.stderr.includes('"msg"'), 'nothing done, nothing logged')
      }
      await (async () => {
        const reopened = await open()
        try {
          assert.equal(await reopened.trashed(1), undefined)
          assert.ok(await reopened.trashed(3))
          assert.ok(await reopened.get(2))
        } finally {
          await reopened.close()
        }
      })()
      assert.equal((await plants(['trash', 'purge', '3', ...args], env)).code, 0)
      assert.equal((await plants(['trash', 'list', ...args], env)).stdout, 'the trash is empty\n')
      assert.equal((await plants(['trash', 'list', '--json', ...args], env)).stdout, '[]\n')
    })

    test('usage mistakes: --json with purge, a bad id, --url, no action', async (t) => {
      const { env, args, open } = await target.make(t)
      await (await open()).close()
      for (const [argv, message] of [
        [['purge', '1', '--json'], /^plants trash: --json goes with list\n/],
        [['purge', 'x1'], /^plants trash: the plant's ID is a positive integer, not "x1"\n/],
        [['list', '--url', 'http://127.0.0.1:8080'], /not on a running service \(--url\): over HTTP, use \/v3\/trash/],
        [[], /^plants trash: say list or purge\n/]
      ] as const) {
        const refused = await plants(['trash', ...argv, ...args], env)
        assert.equal(refused.code, 2, argv.join(' '))
        assert.match(refused.stderr, message)
      }
    })
  })
}

import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { promisify } from 'node:util'
import { loadConfig } from '../../src/config.js'
import { ROOT, tempDir } from '../helpers/process.js'

// deploy/plant-catalogue.service, checked by systemd's own tools (Debian's systemd package; .ci/run installs it).

const run = promisify(execFile)
const UNIT = join(ROOT, 'deploy/plant-catalogue.service')
const ANALYZE = '/usr/bin/systemd-analyze'
const skip = existsSync(ANALYZE) ? false : 'systemd-analyze is not installed (.ci/run installs Debian\'s systemd package)'

test('systemd-analyze verify accepts the unit, its command in place as a global install puts it', { skip }, async (t) => {
  const root = tempDir('plants-unit')
  t.after(() => root.remove())
  // A root of its own: the system's units (targets the unit depends on), the unit, and its command.
  cpSync('/usr/lib/systemd/system', join(root.path, 'usr/lib/systemd/system'), { recursive: true, verbatimSymlinks: true })
  mkdirSync(join(root.path, 'etc/systemd/system'), { recursive: true })
  cpSync(UNIT, join(root.path, 'etc/systemd/system/plant-catalogue.service'))
  const exec = /^ExecStart=(\S+)/m.exec(readFileSync(UNIT, 'utf8'))![1]
  assert.equal(exec, '/usr/bin/plant-catalogue', 'where `npm install -g` links the bin when npm\'s prefix is /usr')
  mkdirSync(join(root.path, 'usr/bin'), { recursive: true })
  writeFileSync(join(root.path, exec), '#!/bin/sh\n')
  chmodSync(join(root.path, exec), 0o755)
  const { stdout, stderr } = await run(ANALYZE, ['verify', `--root=${root.path}`, '/etc/systemd/system/plant-catalogue.service'])
  assert.equal(`${stdout}${stderr}`, '', 'no complaint')
})

test('the unit holds the usual hardening, and systemd-analyze security scores it as docs/deploy.md says', { skip }, async () => {
  const unit = readFileSync(UNIT, 'utf8')
  for (const line of ['DynamicUser=yes', 'User=plant-catalogue', 'StateDirectory=plant-catalogue', 'ProtectSystem=strict', 'NoNewPrivileges=yes',
    'ProtectHome=yes', 'PrivateTmp=yes', 'PrivateDevices=yes', 'CapabilityBoundingSet=', 'SystemCallFilter=@system-service', 'KillSignal=SIGTERM']) {
    assert.match(unit, new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'))
  }
  const { stdout } = await run(ANALYZE, ['security', '--offline=true', UNIT]).catch((err: { stdout: string }) => err)
  const score = Number(/Overall exposure level for plant-catalogue\.service: ([\d.]+)/.exec(stdout)?.[1])
  console.log(`systemd-analyze security: exposure ${score}`)
  const doc = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8')
  assert.match(doc, new RegExp(`exposure level of ${score.toFixed(1).replace('.', '\\.')}`), 'docs/deploy.md states the score the unit gets')
})

test("the unit's environment is a configuration the service accepts", () => {
  const unit = readFileSync(UNIT, 'utf8')
  const env: Record<string, string> = {}
  for (const [, assignments] of unit.matchAll(/^Environment=(.*)$/gm)) {
    for (const pair of assignments.split(/\s+/)) {
      const [name, value] = pair.split('=')
      // %S: the state directories' root; %d: the credentials directory.
      env[name] = value.replace('%S', '/var/lib').replace('%d', '/run/credentials/plant-catalogue.service')
    }
  }
  const config = loadConfig(env)
  assert.equal(config.dataDir, '/var/lib/plant-catalogue')
  assert.equal(config.apiKeysFile, '/run/credentials/plant-catalogue.service/api-keys')
  assert.equal(config.port, 8080)
})

test("docs/deploy.md's systemd-run line runs plants as the unit's user on its data folder, and systemd-analyze verify accepts it as a unit", { skip }, async (t) => {
  const unit = readFileSync(UNIT, 'utf8')
  const doc = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8')
  const line = /^ *(systemd-run .*\/plants .*)$/m.exec(doc)?.[1]
  assert.ok(line, 'docs/deploy.md says how to run plants as the service\'s user')
  // The transient unit systemd-run would make: each -p a [Service] setting, each -E an Environment=.
  const words = line.split(/\s+/).slice(1)
  const settings: string[] = []
  let command: string[] = []
  for (let i = 0; i < words.length; i++) {
    if (words[i] === '-p') settings.push(words[++i])
    else if (words[i] === '-E') settings.push(`Environment=${words[++i]}`)
    else if (words[i].startsWith('--')) continue
    else { command = words.slice(i); break }
  }
  // The same user, state folder and environment as the service's, so the two share a folder and its owner.
  for (const setting of ['DynamicUser=yes', 'User=plant-catalogue', 'StateDirectory=plant-catalogue', 'EnvironmentFile=-/etc/plant-catalogue/environment']) {
    assert.ok(settings.includes(setting), `systemd-run sets ${setting}`)
    assert.match(unit, new RegExp(`^${setting.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'), `as the unit does: ${setting}`)
  }
  assert.ok(settings.includes('Environment=DATA_DIR=/var/lib/plant-catalogue'))
  assert.match(unit, /^Environment=.*\bDATA_DIR=%S\/plant-catalogue\b/m, 'the unit\'s DATA_DIR is the same folder (%S is /var/lib)')
  assert.equal(command[0], '/usr/bin/plants', 'beside /usr/bin/plant-catalogue, where a global install links it')

  const root = tempDir('plants-run-unit')
  t.after(() => root.remove())
  cpSync('/usr/lib/systemd/system', join(root.path, 'usr/lib/systemd/system'), { recursive: true, verbatimSymlinks: true })
  mkdirSync(join(root.path, 'etc/systemd/system'), { recursive: true })
  writeFileSync(join(root.path, 'etc/systemd/system/plants-run.service'), `[Service]\n${settings.join('\n')}\nExecStart=${command.join(' ')}\n`)
  mkdirSync(join(root.path, 'usr/bin'), { recursive: true })
  writeFileSync(join(root.path, command[0]), '#!/bin/sh\n')
  chmodSync(join(root.path, command[0]), 0o755)
  const { stdout, stderr } = await run(ANALYZE, ['verify', `--root=${root.path}`, '/etc/systemd/system/plants-run.service'])
  assert.equal(`${stdout}${stderr}`, '', 'no complaint')
})

import { ENV_KEY_NAME, KeyNameTaken, keyStatus, KeyNotFound, SCOPES, type ApiKey, type Scope } from '../catalogue/keys.js'
import { createKey, newKeyProblem, parseExpiry } from '../keys/manage.js'
import { auditLog } from './audit.js'
import { withCatalogueStore } from './with-store.js'
import { CommandFailed, jsonArray, oneOf, UsageError, type Command, type Io } from './command.js'
import { keyRecord } from '../keys/schemas.js'

export const keysCommand: Command = {
  name: 'keys',
  usage: `Usage: plants keys create NAME --scope SCOPE [--expires WHEN] [--create] [options]
       plants keys list [options]
       plants keys revoke NAME [options]

Manages the API keys stored in the catalogue (the same keys as GET, POST /v3/keys and
DELETE /v3/keys/{name}, which need an admin key). create prints the key's secret once: only its
SHA-256 is kept, so copy it now. A revoked key is refused by every instance within 2 seconds; its
name stays listed and is not given to another key (revoking it again changes nothing). While a
client rotates, give it a new key, move it over, then revoke the old one. The keys of API_KEYS
and API_KEYS_FILE (env-1, env-2, …) are not stored here: remove them there and restart.

Scopes, each including those before it:
  read    reads, where they are protected (READS=keys): a shop front
  sell    change the status of existing plants and nothing else: a till
  write   every change to plants and photos, deleting to the trash, listing it and restoring
          from it: an integration
  admin   all of write, and purging the trash, keys and webhooks: staff, operators

Options:
  --scope SCOPE    create: read, sell, write or admin
  --expires WHEN   create: when the key stops working. A date (2027-01-31) means the key works
                   through that day, UTC, and expires at the start of the next; a date and time
                   with its zone (2027-01-31T18:00:00Z) is taken as given
  --create         create: start a new catalogue if the data folder (or database) has none yet,
                   to hold the first key before the service first starts
  --json           list: a JSON array of the keys, each as GET /v3/keys shows it
  --data-dir DIR   the service's data folder (default: the catalogue in $DATABASE_URL when set,
                   else $DATA_DIR, else ./data); one that holds no catalogue is refused

list shows every stored key with its STATUS: active, expired or revoked. create and revoke write
the service's log line for them (API key created, API key revoked: JSON, on standard error).`,
  options: {
    scope: { type: 'string' },
    expires: { type: 'string' },
    create: { type: 'boolean' },
    json: { type: 'boolean' },
    'data-dir': { type: 'string' },
    // Accepted to be refused with a way forward: --url names a running service in other commands.
    url: { type: 'string' }
  },
  run: runKeys
}

async function runKeys (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  const [action, name, ...extra] = positionals
  if (extra.length > 0) throw new UsageError(`unexpected ${JSON.stringify(extra[0])}`)
  if (values.url !== undefined) {
    throw new UsageError('keys work on the catalogue\'s own database (--data-dir, or DATABASE_URL), not on a running service (--url): ' +
      'over HTTP, use /v3/keys with an admin key')
  }
  if (values.create === true && action !== 'create') throw new UsageError('--create goes with create')
  if (values.json === true && action !== 'list') throw new UsageError('--json goes with list')
  if (action === 'list') {
    if (name !== undefined) throw new UsageError('list takes no NAME')
    return await withCatalogueStore('keys', values, io, async (store) => {
      const keys = await store.keys.list()
      const now = Date.now()
      io.stdout.write(values.json === true ? jsonArray(keys.map((key) => keyRecord(key, now))) : table(keys, now))
      return 0
    })
  }
  if (action === 'revoke') {
    if (name === undefined) throw new UsageError('revoke takes the key\'s NAME')
    if (ENV_KEY_NAME.test(name)) throw new UsageError(`${name} is a key of API_KEYS or API_KEYS_FILE, not a stored one: remove it there and restart the service`)
    return await withCatalogueStore('keys', values, io, async (store, config) => {
      try {
        await store.keys.revoke(name, Date.now())
      } catch (err) {
        if (!(err instanceof KeyNotFound)) throw err
        // Revoked already: what was asked for holds, as DELETE /v3/keys/{name} answers 204 again.
        const earlier = (await store.keys.list()).find((key) => key.name === name)
        if (earlier?.revokedAt == null) throw new CommandFailed(`no key named ${name} (plants keys list shows them)`)
        auditLog(io, config, { target: name, revokedAlready: true }, 'API key revoked')
        io.stdout.write(`${name} was revoked already, at ${iso(earlier.revokedAt)}\n`)
        return 0
      }
      auditLog(io, config, { target: name }, 'API key revoked')
      io.stdout.write(`revoked ${name}: every instance refuses it within 2 seconds\n`)
      return 0
    })
  }
  if (action === 'create') {
    if (name === undefined) throw new UsageError('create takes the key\'s NAME')
    const scope = oneOf<Scope>('scope', values.scope, SCOPES, undefined)
    if (scope === undefined) throw new UsageError(`create needs --scope (${SCOPES.join(', ')})`)
    const expires = values.expires === undefined ? null : dateOf(values.expires)
    const now = Date.now()
    const problem = newKeyProblem(name, expires, now)
    if (problem !== undefined) throw new UsageError(problem.field === 'name' ? `the name ${JSON.stringify(name)} ${problem.message}` : `--expires ${problem.message}`)
    return await withCatalogueStore('keys', values, io, async (store, config) => {
      try {
        const { key, secret } = await createKey(store.keys, name, scope, expires, now)
        auditLog(io, config, { target: name, scope }, 'API key created')
        io.stdout.write(`${secret}\n`)
        // A date alone is said back as given: the day the key works through, as the operator thinks of it.
        const through = /^\d{4}-\d{2}-\d{2}$/.test(values.expires ?? '') ? `works through ${values.expires as string} (UTC), ` : ''
        io.stderr.write(`created ${key.name} (scope ${key.scope}${key.expiresAt === null ? '' : `, ${through}expires ${iso(key.expiresAt)}`}): ` +
          'the line above is its secret, shown this once\n')
        return 0
      } catch (err) {
        if (err instanceof KeyNameTaken) throw new CommandFailed(`a key named ${name} exists (names are never reused; choose another)`)
        throw err
      }
    }, { create: values.create === true, hint: 'pass --create to start a new catalogue there (for its first key, before the service first starts)' })
  }
  throw new UsageError(action === undefined ? 'say create, list or revoke' : `unknown action ${JSON.stringify(action)}: say create, list or revoke`)
}

function dateOf (text: string): number {
  const expiry = parseExpiry(text)
  if (!expiry.ok) throw new UsageError(`--expires ${expiry.why}`)
  return expiry.ms
}

/** The API's form (RFC 3339, UTC, with milliseconds), so the two listings read alike. */
const iso = (ms: number | null): string => ms === null ? '-' : new Date(ms).toISOString()

function table (keys: ApiKey[], now: number): string {
  if (keys.length === 0) return 'no keys stored (keys from API_KEYS or API_KEYS_FILE are not listed)\n'
  const rows = [['NAME', 'SCOPE', 'STATUS', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED'],
    ...keys.map((k) => [k.name, k.scope, keyStatus(k, now), iso(k.createdAt), iso(k.expiresAt), iso(k.lastUsedAt), iso(k.revokedAt)])]
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd()).join('\n') + '\n'
}

import { Type, type Static } from '@sinclair/typebox'
import { keyStatus, SCOPES, type ApiKey as StoredKey, type Scope as ScopeName } from '../catalogue/keys.js'
import { component, ref } from '../http/schemas/components.js'
import { EXPIRY_FORMS, KEY_NAME_RULE } from './manage.js'

// The key resource's schemas: the only source of its validation, types and document.

const time = (description: string) => Type.String({ description: `${description}: RFC 3339, UTC, with milliseconds` })
const maybeTime = (description: string) => Type.Union([time(description), Type.Null()], { description })

// An enum rather than a union of constants: a refusal then says "must be one of read, sell, write, admin".
export const Scope = Type.Unsafe<ScopeName>({
  type: 'string',
  enum: [...SCOPES],
  description: 'read < sell < write < admin; each includes those before it. sell: change the status of existing plants and nothing else (a till).'
})

const storedFields = {
  name: Type.String({ description: 'Unique; what the access log and the feed name as the actor.' }),
  scope: Scope,
  createdAt: time('When the key was created'),
  expiresAt: maybeTime('When the key stops working (null: never)'),
  lastUsedAt: maybeTime('Last use, to the minute (null: never used)'),
  revokedAt: maybeTime('When the key was revoked (null: not revoked)'),
  status: Type.Unsafe<'active' | 'expired' | 'revoked'>({ type: 'string', enum: ['active', 'expired', 'revoked'], description: 'Whether the key works now: active, expired (past expiresAt) or revoked (revoked outranks expired)' })
}
const keyFields = {
  ...storedFields,
  createdAt: maybeTime('When the key was created (null: a key of the environment, which the service does not record)'),
  lastUsedAt: maybeTime('Last use, to the minute (null: never used, or a key of the environment, whose use is not recorded)'),
  source: Type.Unsafe<'stored' | 'environment'>({
    type: 'string',
    enum: ['stored', 'environment'],
    description: 'stored: made with POST /v3/keys or plants keys create, revoked with DELETE /v3/keys/{name}. environment: a key of API_KEYS or API_KEYS_FILE, always admin, never expiring; not revocable through the API (409 key-from-environment): the operator removes it there and restarts the service.'
  })
}
export const ApiKey = component('ApiKey', Type.Object(keyFields, { additionalProperties: false, description: 'An API key as listed: never its secret or its hash.' }))
export type ApiKey = Static<typeof ApiKey>

export const NewApiKey = component('NewApiKey', Type.Object({
  name: KeyName('Lower-case letters, digits, ".", "_" and "-", starting with a letter or digit; env-N is reserved (the keys of API_KEYS), and so are the names given in API_KEYS (409 key-name-taken).'),
  scope: Scope,
  expiresAt: Type.Optional(Type.String({ maxLength: 40, description: `When the key stops working (default: never): ${EXPIRY_FORMS}. A date that does not exist (2027-02-30) is refused.` }))
}, { additionalProperties: false }))

export const CreatedApiKey = component('CreatedApiKey', Type.Object({
  ...storedFields,
  secret: Type.String({ description: 'The key to send (Authorization: Bearer …). Shown this once: only its hash is kept.' })
}, { additionalProperties: false, description: 'A new key with its secret, shown this once.' }))

export const ApiKeyList = component('ApiKeyList', Type.Object({
  items: Type.Array(ref(ApiKey), { description: 'Every stored key, revoked ones included, oldest first; then the keys of the environment (API_KEYS, then API_KEYS_FILE, in their order).' })
}, { additionalProperties: false }))

export const CurrentKey = component('CurrentKey', Type.Object({
  name: Type.Union([Type.String(), Type.Null()], { description: 'The key\'s name, as the feed and the access log name it (null: the service has no keys, and writes are anonymous).' }),
  scope: Scope,
  scopes: Type.Array(Scope, { description: 'Every scope the key holds: its own and those before it, so a client can ask "may it sell?" without knowing their order.' }),
  keysRequired: Type.Boolean({ description: 'false: the service has no keys (API_KEYS, API_KEYS_FILE or stored), so anyone may do anything, as scope admin says.' })
}, { additionalProperties: false, description: 'What the key a request is made with may do.' }))

/** A key's name as a request gives it: a malformed one is invalid-input, not an unknown key. */
export function KeyName (description: string) {
  return Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9][a-z0-9._-]*$', 'x-pattern-message': KEY_NAME_RULE, description })
}

const iso = (ms: number | null): string | null => ms === null ? null : new Date(ms).toISOString()
export function keyRecord (key: StoredKey, now: number) {
  return { name: key.name, scope: key.scope, createdAt: new Date(key.createdAt).toISOString(), expiresAt: iso(key.expiresAt), lastUsedAt: iso(key.lastUsedAt), revokedAt: iso(key.revokedAt), status: keyStatus(key, now) }
}

/** A key of API_KEYS or API_KEYS_FILE as listed: admin, never expiring, never revoked. */
export function environmentKeyRecord (name: string): ApiKey {
  return { name, scope: 'admin', createdAt: null, expiresAt: null, lastUsedAt: null, revokedAt: null, status: 'active', source: 'environment' }
}

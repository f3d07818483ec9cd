import { Type, type Static } from '@sinclair/typebox'
import { SCOPES, type ApiKey as StoredKey } from '../catalogue/keys.js'
import { component, ref } from '../http/components.js'

// The key resource's schemas: the only source of its validation, types and document.

const time = (description: string) => Type.String({ description: `${description}: RFC 3339, UTC, with milliseconds` })
const maybeTime = (description: string) => Type.Union([time(description), Type.Null()], { description })

export const Scope = Type.Union(SCOPES.map((s) => Type.Literal(s)), {
  description: 'read < sell < write < admin; each includes those before it. sell: change the status of existing plants and nothing else (a till).'
})

const keyFields = {
  name: Type.String({ description: 'Unique; what the access log and the feed name as the actor.' }),
  scope: Scope,
  createdAt: time('When the key was created'),
  expiresAt: maybeTime('When the key stops working (null: never)'),
  lastUsedAt: maybeTime('Last use, to the minute (null: never used)'),
  revokedAt: maybeTime('When the key was revoked (null: live)')
}
export const ApiKey = component('ApiKey', Type.Object(keyFields, { additionalProperties: false, description: 'An API key as listed: never its secret or its hash.' }))
export type ApiKey = Static<typeof ApiKey>

export const NewApiKey = component('NewApiKey', Type.Object({
  name: Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9][a-z0-9._-]*$', description: 'Lower-case letters, digits, ".", "_" and "-"; env-N is reserved.' }),
  scope: Scope,
  expiresAt: Type.Optional(Type.String({ maxLength: 40, description: 'When the key stops working (default: never): a date (2027-01-31, midnight UTC) or an RFC 3339 date-time with its zone' }))
}, { additionalProperties: false }))

export const CreatedApiKey = component('CreatedApiKey', Type.Object({
  ...keyFields,
  secret: Type.String({ description: 'The key to send (Authorization: Bearer …). Shown this once: only its hash is kept.' })
}, { additionalProperties: false, description: 'A new key with its secret, shown this once.' }))

export const ApiKeyList = component('ApiKeyList', Type.Object({
  items: Type.Array(ref(ApiKey), { description: 'Every stored key, revoked ones included, oldest first. The keys of API_KEYS (env-N) are not stored and not listed.' })
}, { additionalProperties: false }))

const iso = (ms: number | null): string | null => ms === null ? null : new Date(ms).toISOString()
export function keyRecord (key: StoredKey): ApiKey {
  return { name: key.name, scope: key.scope, createdAt: new Date(key.createdAt).toISOString(), expiresAt: iso(key.expiresAt), lastUsedAt: iso(key.lastUsedAt), revokedAt: iso(key.revokedAt) }
}

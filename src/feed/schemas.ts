import { Type } from '@sinclair/typebox'
import { component, ref } from '../http/schemas/components.js'
import { Plant } from '../plants/record.js'

const Seq = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })

export const Change = component('Change', Type.Object({
  seq: Type.Integer({ minimum: 1, description: 'Position in the feed: increasing, without gaps in what a client is sent.' }),
  kind: Type.Unsafe<'created' | 'updated' | 'deleted'>({ type: 'string', enum: ['created', 'updated', 'deleted'] }),
  id: Type.Integer({ minimum: 1 }),
  version: Type.Integer({ minimum: 1 }),
  actor: Type.String({ description: 'Who made the change: the name of the API key it came with, `anonymous` without one, `cli` for the `plants` command line.' }),
  at: Type.String({ description: 'When the change was made (RFC 3339, UTC, milliseconds).' }),
  plant: Type.Union([ref(Plant), Type.Null()], { description: 'The record after the change; null for a delete.' })
}, { description: 'One committed write, as the feed tells it.' }))

export const ChangePage = component('ChangePage', Type.Object({
  items: Type.Array(ref(Change)),
  next: Type.Integer({ minimum: 0, description: 'The `after` to send for the following page.' })
}, { description: 'Changes after a sequence number, oldest first.' }))

export const CHANGES_PAGE_SIZE = 100

export const ChangesQuery = Type.Object({
  after: Type.Optional({
    ...Seq,
    default: 0,
    description: 'The last sequence number the client has (a read\'s Feed-Position, or the last change applied); 0 for the ' +
      'beginning. Older than the retention or beyond the head: 410.'
  }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: CHANGES_PAGE_SIZE, description: 'Changes a page: 1–1000, default 100.' }))
}, { additionalProperties: false })

export const EventsQuery = Type.Object({
  after: Type.Optional({
    ...Seq,
    description: 'Resume after this sequence number (Last-Event-ID takes precedence); with neither, the stream starts at the head. ' +
      'Written as the stream sends ids, decimal digits without leading zeros, the same rule as Last-Event-ID.'
  })
}, { additionalProperties: false })

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({
    // Leading zeros are refused as in `?after=` (and every integer of a query): one spelling of a position, the one the stream sends.
    pattern: '^(0|[1-9][0-9]{0,15})$',
    'x-pattern-message': 'must be a sequence number written in decimal digits, without leading zeros',
    description: 'Resume after this sequence number: an `id` the stream sent, decimal digits without leading zeros (as `?after=`).'
  }))
})

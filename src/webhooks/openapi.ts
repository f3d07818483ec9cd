// The OpenAPI document's top-level `webhooks` (OpenAPI 3.1): what the service POSTs to a subscribed
// URL, so a receiver can be generated or checked from the same document as the API. The bodies are
// the components the API shows (Change, StockEvent, WebhookTest), by reference.

const header = (name: string, description: string, example?: string): Record<string, unknown> =>
  ({ name, in: 'header', required: true, description, schema: { type: 'string' }, ...(example === undefined ? {} : { example }) })

const HEADERS = [
  header('webhook-id', 'The same for every attempt at one change (`<webhook id>-<seq>`; a stock event: `<webhook id>-<seq>-<kind>`, e.g. `1-42-stock.low`; a test send: `<webhook id>-test-<epoch ms>`): drop a duplicate by it.', '1-42'),
  header('webhook-timestamp', 'When this attempt was signed, in Unix seconds: refuse one too far from now.', '1767225600'),
  header('webhook-signature', '`v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the base64-decoded bytes after `whsec_` of the secret (Standard Webhooks). ' +
    'While a rotated secret overlaps (24 hours), two signatures, space-separated: accept the request if either matches.', 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='),
  // No example: it would hold the release, and the generated client would change with every one.
  header('user-agent', 'The service and its version: `plant-catalogue-webhooks/<version>`.')
]

const RESPONSES = {
  '2XX': { description: 'Delivered, if it came within 10 s: the next change is sent.' },
  default: {
    description: 'Anything else (another status, a redirect, which is never followed, no answer within 10 s, a closed connection) is a failed attempt: ' +
      'the same change is sent again, with the same webhook-id, after 5 s, 15 s, 45 s, … up to 6 hours (each ±20 %), for 3 days; then the webhook turns failing and keeps its place. ' +
      'At most 4 KiB of an answer is read.'
  }
}

const delivery = (operationId: string, summary: string, description: string, schema: string): Record<string, unknown> => ({
  post: {
    tags: ['webhooks'],
    operationId,
    summary,
    description,
    parameters: HEADERS,
    requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } } },
    responses: RESPONSES
  }
})

export const WEBHOOKS_DOCUMENT = {
  change: delivery('webhook-change', 'A change, POSTed to each webhook subscribed to its kind',
    'Each change of the feed is sent as the feed shows it, one at a time per webhook, in feed order (so a plant\'s changes arrive in version order), at least once: ' +
    'a change comes again (same webhook-id) only after a crash or a timeout.', 'Change'),
  stock: delivery('webhook-stock-event', 'A plant crossing into low or no stock, POSTed to each webhook subscribed to stock.low or stock.out',
    'Sent after the movement\'s updated change (to a webhook subscribed to both), in feed order with the other changes, once per crossing and at least once: ' +
    'it comes from the change\'s row in the feed, so it survives restarts and kill -9, and comes again (same webhook-id) only after a crash or a timeout. ' +
    'A movement from above lowStockAt straight to 0 sends stock.low, then stock.out.', 'StockEvent'),
  test: delivery('webhook-test', 'A test send (POST /v3/webhooks/{id}/test, plants webhooks test)',
    'Signed as every delivery; it does not move the webhook\'s place and is not retried.', 'WebhookTest')
}

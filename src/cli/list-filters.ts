import type { PlantQuery } from '../catalogue/query.js'
import { formatCents } from '../catalogue/price-sku-barcode.js'
import { UsageError, type Options } from './command.js'

// A list's filters on the command line: the names of GET /v3/plant's query parameters, checked by
// its own schema and turned into the catalogue's query by its own parsing, so a command finds what
// the API finds and refuses what it refuses (naming the option, as the API names the parameter).

export const LIST_FILTERS = ['q', 'status', 'tag', 'category', 'sku', 'barcode', 'updatedSince', 'priceMin', 'priceMax', 'inStock', 'lowStock', 'sort'] as const

export const LIST_FILTER_OPTIONS: Options = {
  q: { type: 'string' },
  status: { type: 'string', multiple: true },
  tag: { type: 'string', multiple: true },
  category: { type: 'string' },
  sku: { type: 'string' },
  barcode: { type: 'string' },
  updatedSince: { type: 'string' },
  priceMin: { type: 'string' },
  priceMax: { type: 'string' },
  inStock: { type: 'string' },
  lowStock: { type: 'string' },
  sort: { type: 'string' }
}

export const LIST_FILTER_HELP = `  --q TERMS            only plants whose name holds every term (as GET /v3/plant?q=)
  --status STATUS      only plants of this status; repeat for any of several
  --tag TAG            only plants with this tag, ignoring the case of A-Z; repeat to require each
  --category NAME      only plants of this category, ignoring the case of A-Z
  --sku SKU            the plant with this SKU, ignoring case
  --barcode GTIN       plants whose barcode is this GTIN at any length (UPC-A, EAN-13, GTIN-14, GTIN-8)
  --updatedSince TIME  plants changed at or after this RFC 3339 time (2026-05-01T12:00:00Z)
  --priceMin PRICE     plants priced at least this (unpriced plants left out)
  --priceMax PRICE     plants priced at most this (unpriced plants left out)
  --inStock=true|false true: plants with stock available; false: tracked plants with none available
  --lowStock=true      tracked plants whose available is at or below their lowStockAt
  --sort=ORDER         id, -id, name, -name, price, -price, updated or -updated (default id)
                       Each as GET /v3/plant's parameter of the same name, checked by the same rules.`

/** The catalogue's query for the filters given, or undefined when none is (loaded only then). */
export async function listQueryOf (values: Record<string, unknown>): Promise<PlantQuery | undefined> {
  const given: Record<string, unknown> = {}
  for (const name of LIST_FILTERS) if (values[name] !== undefined) given[name] = values[name]
  if (Object.keys(given).length === 0) return undefined
  const [{ ListQuery }, { plantQueryOf }, { queryValidator }, { fieldErrors }, { HttpProblem }] = await Promise.all([
    import('../plants/schemas.js'), import('../plants/query.js'), import('../http/input/validation.js'), import('../http/error-handler.js'), import('../http/problems/problem.js')
  ])
  const validate = queryValidator(ListQuery)
  if (!validate(given)) throw refusal(fieldErrors(validate.errors as Parameters<typeof fieldErrors>[0]))
  try {
    return plantQueryOf(given as Parameters<typeof plantQueryOf>[0])
  } catch (err) {
    if (err instanceof HttpProblem && err.errors !== undefined) throw refusal(err.errors)
    throw err
  }
}

/** The API's first field error, said of the option: "/tag/1 must …" is "--tag must …". */
function refusal (errors: Array<{ path: string, message: string }>): UsageError {
  const [first] = errors
  return new UsageError(`--${first.path.split('/')[1]} ${first.message}`)
}

/**
 * The query as GET /v3/plant's parameters again, for a running service: each filter is held as its
 * key (category and tags with A–Z lower-cased, a barcode as its GTIN-14, prices in cents), which
 * finds on the service what the value given finds.
 */
export function listParamsOf (query: PlantQuery): Record<string, string | string[]> {
  const params: Record<string, string | string[]> = { sort: query.sort }
  if (query.statuses.length > 0) params.status = query.statuses
  if (query.tags.length > 0) params.tag = query.tags
  if (query.terms.length > 0) params.q = query.terms.join(' ')
  for (const name of ['category', 'sku', 'barcode'] as const) if (query[name] !== undefined) params[name] = query[name]
  if (query.updatedSince !== undefined) params.updatedSince = new Date(query.updatedSince).toISOString()
  if (query.priceMin !== undefined) params.priceMin = formatCents(query.priceMin)
  if (query.priceMax !== undefined) params.priceMax = formatCents(query.priceMax)
  if (query.inStock !== undefined) params.inStock = String(query.inStock)
  if (query.lowStock === true) params.lowStock = 'true'
  return params
}

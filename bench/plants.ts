import { existsSync } from 'node:fs'
import { join } from 'node:path'

// Realistic plant bodies, the same for the preload, the ceiling and the load generator.

// One name in ten is the ZZ plant, whose short name `q=zz` finds at a word start.
const NAMES = ['Monstera deliciosa', 'Ficus lyrata', 'Sansevieria trifasciata', 'Calathea orbifolia', 'Pilea peperomioides',
  'Strelitzia nicolai', 'ZZ plant Zamioculcas zamiifolia', 'Epipremnum aureum', 'Alocasia zebrina', 'Philodendron birkin']
/** One plant in 25 (none of them a Monstera, so `search`'s one in ten stays) is spelt without its accent: `q=café` finds it. */
const CAFE = 'Dahlia Cafe au Lait'
const CATEGORIES = ['indoor', 'succulent', 'tropical', 'fern', null]
const TAGS = ['large', 'pet-safe', 'low-light', 'easy-care', 'air-purifying', 'rare', 'hanging', 'flowering']
const STATUSES = ['available', 'pending', 'sold'] as const
const CARE = ['Bright indirect light; water when the top 3 cm of soil are dry.', 'Tolerates low light and a missed watering or two.',
  'Keep away from draughts; mist in winter.', 'Repot every second spring in a free-draining mix.', 'Feed monthly from April to September.']

/** The seed's fields: what every version of the service accepts (a --baseline from before the store fields knows no others). */
export interface SeedBody { name: string, category: string | null, tags: string[], status: typeof STATUSES[number] }
/** With the store fields. */
export interface PlantBody extends SeedBody { description: string | null, price: string | null, sku: string | null, barcode: string | null }

/**
 * The i-th plant: a name, a category, two or three tags, a status, and the store fields in a shop's
 * proportions: a price on 9 in 10, a SKU on 4 in 5, a barcode on 7 in 10, a description on 3 in 5.
 * Its SKU is skuFor(i + 1): the preload creates plant i as id i + 1, so a PUT of id N keeps N's SKU.
 */
export function plantFor (i: number): PlantBody {
  const t = i % TAGS.length
  const tags = i % 3 === 0 ? [TAGS[t], TAGS[(t + 3) % TAGS.length], TAGS[(t + 5) % TAGS.length]] : [TAGS[t], TAGS[(t + 3) % TAGS.length]]
  const name = i % 25 === 13 ? CAFE : NAMES[i % NAMES.length]
  // Prices from 2.99 to 199.98, scattered (not in id order), so sort=price walks an index, not the ids.
  const cents = 299 + ((i * 7919) % 19_700)
  return {
    name: `${name} #${i}`,
    category: CATEGORIES[i % CATEGORIES.length],
    tags,
    status: STATUSES[i % 7 === 0 ? 1 : i % 11 === 0 ? 2 : 0],
    description: i % 5 < 3 ? `${name}, grown in our own glasshouse. ${CARE[i % CARE.length]}${i % 2 === 0 ? ` ${CARE[(i + 2) % CARE.length]}` : ''}` : null,
    price: i % 10 === 9 ? null : `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`,
    sku: hasSku(i) ? skuFor(i + 1) : null,
    barcode: hasBarcode(i) ? barcodeFor(i) : null
  }
}

/**
 * Whether a checkout takes the store fields (issue 25): its module for them, under either name it
 * has had (store-fields.ts until 5151ed2 renamed it price-sku-barcode.ts). A --baseline found
 * without them is sent the seed's fields alone; one with them wrongly taken for one without was
 * measured on smaller rows and bodies than the service, which flattered it (01febcb is such a one).
 */
export const storeFieldsIn = (dir: string): boolean =>
  existsSync(join(dir, 'src/catalogue/price-sku-barcode.ts')) || existsSync(join(dir, 'src/catalogue/store-fields.ts'))

/** The seed's fields of the i-th plant alone. */
export function seedPlantFor (i: number): SeedBody {
  const { name, category, tags, status } = plantFor(i)
  return { name, category, tags, status }
}

export const hasSku = (i: number): boolean => i % 5 !== 4
export const hasBarcode = (i: number): boolean => i % 10 < 7

/** The SKU of the plant with this id (ids, not indexes: a PUT knows the id). */
export const skuFor = (id: number): string => `PL-${String(id).padStart(7, '0')}`

/** A GTIN-13 in the in-store range (prefix 20), unique per plant, with its GS1 check digit. */
export function barcodeFor (i: number): string {
  const body = `20${String(i).padStart(10, '0')}`
  let sum = 0
  // From the right: weights 3, 1, 3, …
  for (let k = body.length - 1, weight = 3; k >= 0; k--, weight = 4 - weight) sum += Number(body[k]) * weight
  return `${body}${(10 - (sum % 10)) % 10}`
}

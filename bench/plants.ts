// Realistic plant bodies, the same for the preload, the ceiling and the load generator.

const NAMES = ['Monstera deliciosa', 'Ficus lyrata', 'Sansevieria trifasciata', 'Calathea orbifolia', 'Pilea peperomioides',
  'Strelitzia nicolai', 'Zamioculcas zamiifolia', 'Epipremnum aureum', 'Alocasia zebrina', 'Philodendron birkin']
const CATEGORIES = ['indoor', 'succulent', 'tropical', 'fern', null]
const TAGS = ['large', 'pet-safe', 'low-light', 'easy-care', 'air-purifying', 'rare', 'hanging', 'flowering']
const STATUSES = ['available', 'pending', 'sold'] as const

export interface PlantBody { name: string, category: string | null, tags: string[], status: typeof STATUSES[number] }

/** The i-th plant: a name, a category, two or three tags, a status. */
export function plantFor (i: number): PlantBody {
  const t = i % TAGS.length
  const tags = i % 3 === 0 ? [TAGS[t], TAGS[(t + 3) % TAGS.length], TAGS[(t + 5) % TAGS.length]] : [TAGS[t], TAGS[(t + 3) % TAGS.length]]
  return {
    name: `${NAMES[i % NAMES.length]} #${i}`,
    category: CATEGORIES[i % CATEGORIES.length],
    tags,
    status: STATUSES[i % 7 === 0 ? 1 : i % 11 === 0 ? 2 : 0]
  }
}

import { ApiError, describe } from './api.js'

// What the list says of a search it cannot show: the page's own limits, said before the catalogue
// has to, and the catalogue's refusals, with the filter named and the rule it broke.

/** Why the search box cannot be sent as it stands ('' when it can), said before the server has to. */
export function searchProblem (text: string): string {
  if (text === '') return ''
  if (text.length > 100) return 'Search at most 100 characters.'
  const terms = text.split(/\s+/)
  if (terms.length > 5) return 'Search at most 5 words.'
  // Words of 1–2 letters are searched too, as the start of a word of the name.
  return ''
}

const FILTER_NAMES: Record<string, string> = { q: 'the search', category: 'the category', tag: 'the tag', status: 'the status', sort: 'the order' }

/** Why the list could not be loaded, in staff's words: a refused filter is named, with the rule it broke. */
export function refusal (err: unknown): string {
  if (err instanceof ApiError && err.code === 'query-too-slow') {
    return 'This search would take the catalogue too long. Add letters to the search or choose another filter, then try again.'
  }
  if (err instanceof ApiError && err.status === 400) {
    for (const { path, message } of err.problem?.errors ?? []) {
      const filter = FILTER_NAMES[path.split('/')[1] ?? '']
      if (filter !== undefined) return `The catalogue cannot search for this: ${filter} ${message}.`
    }
  }
  return `The plants could not be loaded. ${describe(err, 'The list')}`
}

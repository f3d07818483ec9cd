import { nameKey } from './name-key.js'
import { foldKey, isShortTerm } from './search-key.js'

/**
 * The key sort=name orders by, stored by both engines beside the name and carried in its cursors:
 * compared by code point (SQLite's BINARY, PostgreSQL's COLLATE "C", compareCodePoints), it orders
 * names as people read a list.
 * - Accents and case folded as q folds them (search-key.ts foldKey): "Bégonia rex" sits beside
 *   "Begonia maculata".
 * - Each run of ASCII digits (after the fold, so full-width digits count) by its value: written as
 *   how many digits its length has, its length, then its digits without leading zeros. Every part
 *   is a digit, so "6" (116) comes before "14" (1214), and a number sorts where a digit would among
 *   other characters. Digits of other scripts stay characters.
 * - Leading zeros only break a tie: "7" and "007" have one value, so the main key is the same and
 *   each run's count of leading zeros follows it after U+0001 (lower than any character a folded name
 *   holds, so it never reorders names whose main keys differ). Fewer zeros first.
 */
export const nameOrderKey = (name: string): string => orderKeyOfFolded(foldKey(nameKey(name)))

/** nameOrderKey of a name already folded as q folds it (foldKey of its nameKey). */
export function orderKeyOfFolded (folded: string): string {
  const zeros: string[] = []
  const main = folded.replace(/[0-9]+/g, (run) => {
    const digits = run.replace(/^0+(?=[0-9])/, '')
    zeros.push(byValue(String(run.length - digits.length)))
    return byValue(digits)
  })
  return zeros.every((z) => z === ZERO) ? main : `${main}\u0001${zeros.join('')}`
}

/**
 * Whether a (folded) term is in a name's folded key exactly where it is in its name order key, so a
 * walk of the name index can decide it on the index entry: a long term (a short one matches at word
 * starts only) with no ASCII digit (digit runs are rewritten in the key) and no control character
 * (the key's tie-break part follows U+0001). The key keeps every other character of the folded name
 * as it is, in the same order, and each digit run stays a run of digits: a term without digits is
 * found in a run of other characters, and those runs are the same in both.
 */
export const orderKeyDecides = (term: string): boolean => !isShortTerm(term) && !/[0-9\p{Cc}]/u.test(term)

/** Digits without leading zeros, prefixed by their count's length and their count: code point order is numeric order. */
const byValue = (digits: string): string => `${String(digits.length).length}${digits.length}${digits}`

const ZERO = byValue('0')

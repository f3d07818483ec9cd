/**
 * What `q` compares: a name's key (name-key.ts) with its compatibility forms and accents folded, the
 * same on both engines because JavaScript computes it (SQLite's and PostgreSQL's own folding tables
 * differ from each other and from this). The compatibility decomposition (NFKD, as NFKC folds) turns
 * full-width letters and ligatures into plain ones ("ｆｉｃｕｓ" and "ﬁcus" are "ficus"); lower-cased
 * again, as some of them decompose to capitals ("ℌ" is "H"); accents are the combining marks it
 * leaves: "é" is "e", "İ" is "i"; a letter with no decomposition stays itself ("ø", "ß", "æ").
 * Control characters become spaces: a term never holds one (refused), nor a space, so no term
 * matches across one either way, and the engines' indexes can use them as markers.
 * A word is a run of letters and digits (\p{L}, \p{N}); a short term (1–2 characters) matches where
 * a word starts: at the start of the name or after a character that is neither.
 * Free of imports, because the SQLite writer thread loads it too.
 */
export const foldKey = (key: string): string =>
  // Printable ASCII has no compatibility form, mark or control character: most names, and the
  // per-candidate check of a search, skip the Unicode passes.
  PRINTABLE_ASCII.test(key) ? key.toLowerCase() : key.normalize('NFKD').toLowerCase().replace(/\p{M}/gu, '').replace(/\p{Cc}/gu, ' ')

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

/** Terms of fewer characters than this match the start of a word; longer ones, anywhere. */
export const SHORT_TERM = 3

export const isShortTerm = (term: string): boolean => [...term].length < SHORT_TERM

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u

/** Where a word may start in the folded key: index 0 and after every character that is not a letter or digit. */
export function wordStarts (folded: string): string[] {
  const chars = [...folded]
  const starts: string[] = []
  for (let i = 0; i < chars.length; i++) {
    if (i > 0 && LETTER_OR_DIGIT.test(chars[i - 1])) continue
    if (chars[i] === ' ') continue // no term holds a space
    starts.push(chars[i] + (chars[i + 1] ?? ''))
  }
  return starts
}

/** Does the folded key hold the (folded) term: anywhere when it is long, at a word's start when short? */
export function keyHolds (folded: string, term: string): boolean {
  if (!isShortTerm(term)) return folded.includes(term)
  const length = [...term].length
  return wordStarts(folded).some((start) => length === 1 ? start.startsWith(term) : start === term)
}

// The index's markers: U+0001 opens a word start's first two characters (U+0003 standing for a
// missing second), U+0002 U+0002 its first one. No folded key holds a control character, so these
// trigrams come from the word starts alone.

/** The text the SQLite trigram index holds for a name key: the folded key, then its word starts, marked. */
export function searchText (key: string): string {
  const folded = foldKey(key)
  const starts = [...new Set(wordStarts(folded))].map((s) => {
    const [first, second = '\u0003'] = [...s]
    return `\u0001${first}${second}\u0002\u0002${first}`
  })
  return starts.length === 0 ? folded : `${folded} ${starts.join('')}`
}

/** The index trigram that finds the word starts of a short (folded) term. */
export const startTrigram = (term: string): string => [...term].length === 1 ? `\u0002\u0002${term}` : `\u0001${term}`

/** The word starts PostgreSQL indexes for a name key (a text[] with a GIN index): each start's first character and first two. */
export const startTokens = (key: string): string[] => startTokensOfFolded(foldKey(key))

/** startTokens of a key already folded (foldKey). */
export function startTokensOfFolded (folded: string): string[] {
  const tokens = new Set<string>()
  for (const start of wordStarts(folded)) {
    const chars = [...start]
    tokens.add(chars[0])
    if (chars.length === 2) tokens.add(start)
  }
  return [...tokens]
}

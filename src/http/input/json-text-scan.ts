/**
 * What JSON.parse cannot tell about a text it accepted: a member named twice in one object (the last
 * one would silently win) and numbers written with a fraction or an exponent (`1.0` and `1e2` parse
 * to the integers 1 and 100). The text is walked once, after JSON.parse has accepted it, so nothing
 * here checks syntax. Libraries that report both (jsonc-parser's visitor, lossless-json) cost several
 * times the parse itself on a plant; this walk costs a fraction of it.
 */
export interface MemberFindings {
  /** JSON pointer of the first member named a second time in its object. */
  duplicate?: string
  /** The text nests arrays and objects deeper than MAX_DEPTH (the walk stopped there). */
  tooDeep?: true
  /** JSON pointers of the numbers written with a fraction or an exponent. */
  fractional: string[]
}

interface Frame {
  /** The names seen so far (an object), or undefined (an array). */
  names: Set<string> | undefined
  /** The member name or array index the walk is in. */
  at: string | number
}

/**
 * No body this service reads nests deeper than a few levels (a batch's plant's tags: 5). A pointer
 * costs its depth, so without a bound a small body of numbers under many brackets costs depth x
 * count; with it the walk stays linear in the text's length.
 */
export const MAX_DEPTH = 32

const QUOTE = 0x22
const BACKSLASH = 0x5c

export function findMembers (text: string): MemberFindings {
  const frames: Frame[] = []
  const fractional: string[] = []
  let expectName = false
  let i = 0
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === 0x7b) { // {
      if (frames.length === MAX_DEPTH) return { tooDeep: true, fractional }
      frames.push({ names: new Set(), at: '' })
      expectName = true
      i++
    } else if (c === 0x5b) { // [
      if (frames.length === MAX_DEPTH) return { tooDeep: true, fractional }
      frames.push({ names: undefined, at: 0 })
      i++
    } else if (c === 0x7d || c === 0x5d) { // } ]
      frames.pop()
      i++
    } else if (c === 0x2c) { // ,
      const top = frames[frames.length - 1]
      if (top.names !== undefined) expectName = true
      else top.at = (top.at as number) + 1
      i++
    } else if (c === QUOTE) {
      const end = closingQuote(text, i)
      if (expectName) {
        const raw = text.slice(i + 1, end)
        const name = raw.includes('\\') ? JSON.parse(text.slice(i, end + 1)) as string : raw
        const top = frames[frames.length - 1]
        top.at = name
        if (top.names!.has(name)) return { duplicate: pointer(frames), fractional }
        top.names!.add(name)
        expectName = false
      }
      i = end + 1
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) { // - or a digit: a number
      let exact = true
      i++
      for (let d = text.charCodeAt(i); (d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d; d = text.charCodeAt(++i)) {
        if (d === 0x2e || d === 0x65 || d === 0x45) exact = false
      }
      if (!exact) fractional.push(pointer(frames))
    } else {
      i++ // white space, ':', and the letters of true, false and null
    }
  }
  return { fractional }
}

function closingQuote (text: string, open: number): number {
  let end = text.indexOf('"', open + 1)
  for (;;) {
    let backslashes = 0
    while (text.charCodeAt(end - 1 - backslashes) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return end
    end = text.indexOf('"', end + 1)
  }
}

const pointer = (frames: Frame[]): string =>
  frames.map((f) => `/${String(f.at).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('')

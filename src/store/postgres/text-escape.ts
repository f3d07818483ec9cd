// PostgreSQL's text cannot hold U+0000, which JSON allows and SQLite keeps. Such strings are stored
// with an escape led by U+FFFF (a noncharacter that text does not use; itself escaped too), so they
// come back exactly as sent and compare equal in filters. Every other string is stored unchanged.
const ESCAPED = /[\0\uffff]/g

export const toPostgresText = (s: string): string =>
  s.search(ESCAPED) >= 0 ? s.replace(ESCAPED, (c) => (c === '\0' ? '\uffff0' : '\uffff1')) : s

export const fromPostgresText = (s: string): string =>
  s.includes('\uffff') ? s.replace(/\uffff([01])/g, (_m, d: string) => (d === '0' ? '\0' : '\uffff')) : s

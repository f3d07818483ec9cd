// The phases' arithmetic on rounds: a median that leaves out rounds without a figure, and a ratio
// written with two decimals ('-' where there is none).

export const median = (xs: number[]): number => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length === 0 ? NaN : s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

export const r2 = (x: number): string => Number.isFinite(x) ? String(Math.round(x * 100) / 100) : '-'

/**
 * A spreadsheet runs a cell that begins with `=`, `+`, `-` or `@` (and some with a tab or carriage
 * return first) as a formula: a plant named `=HYPERLINK(…)` would be a live link in the export.
 * OWASP's advice: write such a cell with a `'` first, which spreadsheets show as text. Import takes
 * that `'` off again, so every value survives the round trip exactly; a value that itself begins with
 * `'` before such a character gets one more, so it is never mistaken for a neutralised one.
 */
const FORMULA_START = /^[=+\-@\t\r]/

const neutralised = (value: string): boolean =>
  FORMULA_START.test(value) || (value.startsWith("'") && neutralised(value.slice(1)))

/** The cell as export writes it. */
export const neutraliseFormula = (value: string): string => neutralised(value) ? `'${value}` : value

/** The value export neutralised, read back from its cell. */
export const restoreFormula = (cell: string): string =>
  cell.startsWith("'") && neutralised(cell.slice(1)) ? cell.slice(1) : cell

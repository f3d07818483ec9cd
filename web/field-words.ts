// What the catalogue says of a refused field, in staff's words: its rules for a price, a SKU, a
// barcode and a low-stock threshold are written for the programs that call it ("a decimal string",
// "a GTIN", "an integer or null"), not for a person at the shop counter. Other fields' messages
// already read plainly and pass through.

const PRICE = 'Enter the price as an amount such as 12.50: digits, at most 2 of them after the point, no currency sign, less than 1,000,000,000.'
const SKU = 'Use at most 64 letters, digits, dots, dashes and underscores (no spaces).'
const BARCODE = 'Enter the 8, 12, 13 or 14 digits printed under the bars.'
const THRESHOLD = 'Enter a whole number of units, 0 or more, or leave it empty for never.'
const CHECK_DIGIT = 'The last digit (the check digit) does not fit the digits before it: check the barcode was typed or scanned correctly.'

/** The words to show beside `field` for the catalogue's `message` about it. */
export function fieldWords (field: string, message: string): string {
  if (field === 'price') return PRICE
  if (field === 'sku' && message.startsWith('must be 1–64 characters')) return SKU
  if (field === 'lowStockAt') return THRESHOLD
  if (field === 'barcode') return /check digit/.test(message) ? CHECK_DIGIT : BARCODE
  return `${message}.`.replace(/^./, (c) => c.toUpperCase())
}

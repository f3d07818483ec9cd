import { api } from './api.js'

// Prices are in the catalogue's one currency (GET /v3 names it), shown the way the browser's
// language writes money ("€12.50", "12,50 €").

let format: Intl.NumberFormat | undefined
let code = ''

/** Learns the catalogue's currency once; the list waits for it so that prices show in it from the first. */
export const currencyReady: Promise<void> = loadCurrency()

async function loadCurrency (): Promise<void> {
  try {
    const { body } = await api<{ currency: string }>('GET', '/v3')
    code = body.currency
    format = new Intl.NumberFormat(navigator.language, { style: 'currency', currency: code })
    for (const label of document.querySelectorAll<HTMLElement>('[data-currency]')) label.textContent = code
  } catch {
    // Prices still show, without the currency's sign.
  }
}

/** The catalogue's currency (ISO 4217), '' until GET /v3 answered. */
export const currencyCode = (): string => code

/** A record's price ("12.50") as staff read it, '' when the plant is not priced. */
export function money (price: string | null): string {
  if (price === null) return ''
  return format?.format(Number(price)) ?? price
}

/**
 * What staff typed in the price box, as the API takes it: "12,5" and "12.5" both mean 12.50;
 * '' is "not priced". Anything else goes as typed, for the service to say what is wrong.
 */
export function priceOf (typed: string): string | null {
  const text = typed.trim().replace(/\s/g, '')
  if (text === '') return null
  return /^\d+,\d{1,2}$/.test(text) ? text.replace(',', '.') : text
}

/**
 * A store's list read newest first, `size` rows a page, each page after the last row's `keyOf` (a
 * version, a ledger position), until a page comes short; `read` answers undefined for a plant
 * that is not there.
 */
export async function * pagesBefore<T> (read: (before: number | undefined, size: number) => Promise<T[] | undefined>, size: number, keyOf: (row: T) => number): AsyncGenerator<T[]> {
  let before: number | undefined
  for (;;) {
    const page = await read(before, size)
    if (page === undefined || page.length === 0) return
    yield page
    if (page.length < size) return
    before = keyOf(page[page.length - 1])
  }
}

/**
 * The key names are searched by: JavaScript's toLowerCase, computed where the write happens and
 * stored, so both engines match the very same strings (SQL lower() differs between engines and from
 * JavaScript). q folds accents from this key (search-key.ts); sort=name orders by a key built from
 * it (name-order.ts).
 * Its own module, free of imports, because the SQLite writer thread loads it too.
 */
export const nameKey = (name: string): string => name.toLowerCase()

/**
 * The key names are sorted and searched by: JavaScript's toLowerCase, computed where the write
 * happens and stored, so both engines order and match the very same strings (SQL lower() differs
 * between engines and from JavaScript). Accents are not folded here: sort=name keeps "é" after "z";
 * q folds them from this key (search-key.ts).
 * Its own module, free of imports, because the SQLite writer thread loads it too.
 */
export const nameKey = (name: string): string => name.toLowerCase()

import type Database from 'better-sqlite3'

// Per category key, the least and greatest name order key any of its plants has ever had. A walk of
// plants_name for a category starts at the bound and stops at the other: a common category whose
// plants all sit at one end of name order (no fern among the first 76 % of -name at 1,000,000) was
// otherwise reached by stepping every entry before them. The bounds only widen (a plant moved out of
// a category or deleted leaves them as they were): a stale bound is still a correct place to start,
// because no plant of the category lies beyond what was ever written. Written by the writer in the
// write's transaction: a row touched only when a name falls outside its category's bounds, where an
// index on (category, name order) costs every create a random page (a fifth of POST, stop 60).

// Run again (user_version set back), it builds the bounds anew from the plants there: how a
// catalogue written by a release before it since (which widens nothing) is put right (upgrades.md).
export const CATEGORY_NAME_BOUNDS_MIGRATION = `
  CREATE TABLE IF NOT EXISTS category_name_bounds (
    category_key TEXT PRIMARY KEY,
    least TEXT NOT NULL,
    greatest TEXT NOT NULL
  ) STRICT, WITHOUT ROWID;
  DELETE FROM category_name_bounds;
  INSERT INTO category_name_bounds (category_key, least, greatest)
    SELECT lower(category), min(name_order_key), max(name_order_key) FROM plants WHERE category IS NOT NULL GROUP BY lower(category);
`

export interface NameBounds { least: string, greatest: string }

/** Widens a category's bounds to hold a name order key (a plant written with that name and category). */
export function boundsWidener (db: Database.Database): (category: string | null, orderKey: string) => void {
  // The key as plants_category_key holds it, and the comparison SQLite's index uses (BINARY): both in SQL.
  const widen = db.prepare(`INSERT INTO category_name_bounds (category_key, least, greatest) VALUES (lower(?), ?, ?)
    ON CONFLICT (category_key) DO UPDATE SET least = min(least, excluded.least), greatest = max(greatest, excluded.greatest)
    WHERE excluded.least < least OR excluded.greatest > greatest`)
  return (category, orderKey) => {
    if (category !== null) widen.run(category, orderKey, orderKey)
  }
}

/** Reads a category key's bounds (undefined: no plant has ever had it). */
export function boundsReader (db: Database.Database): (categoryKey: string) => NameBounds | undefined {
  // A reader of a file not yet migrated walks unbounded, as before.
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'category_name_bounds'").get() === undefined) return () => undefined
  const read = db.prepare<[string], NameBounds>('SELECT least, greatest FROM category_name_bounds WHERE category_key = ?')
  return (categoryKey) => read.get(categoryKey)
}

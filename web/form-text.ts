// What the open plant's boxes hold, as the plant's fields.

export const splitTags = (text: string): string[] => [...new Set(text.split(',').map((t) => t.trim()).filter(Boolean))]

/** An empty box is "none". */
export const orNull = (text: string): string | null => text.trim() === '' ? null : text.trim()

/** Two values of a field, compared as the JSON they are sent as. */
export const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

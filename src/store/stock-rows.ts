// Stock rows as both engines store them (the same columns): what the admin store reads and copies.

/** The ledger's columns, in MovementRow's order (admin-store.ts). */
export const MOVEMENT_COLUMNS = 'seq, plant_id, at, actor, location, delta, reason, reference, on_hand_after'

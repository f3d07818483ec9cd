-- A restore from the trash and a revert have history kinds of their own (catalogue/history.ts
-- KIND_CODES: 3 reverted, 4 restored). A restore was written as created (0) with no changes, where
-- a creation always lists its name: those become restored (by what they hold, not their version,
-- which a restore from a backup moves up). A revert was written as updated (1), which nothing
-- tells apart from an update: those stay updated. One pass over the history (restores are few).
UPDATE history SET kind = 4 WHERE kind = 0 AND changes = '{}';

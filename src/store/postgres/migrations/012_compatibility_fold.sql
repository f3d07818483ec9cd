-- q folds compatibility forms too ("ｆｉｃｕｓ" and "ﬁcus" find "ficus"; search-key.ts foldKey,
-- NFKD). The search columns are computed by the application: those of names holding any character
-- beyond ASCII (the only ones whose folding may change) are emptied here and filled again at start-up,
-- in batches of 20,000 (search-columns.ts fillSearchKeys), as when migration 007 added them.
UPDATE plants SET search_key = NULL, search_starts = NULL WHERE octet_length(name) <> char_length(name);

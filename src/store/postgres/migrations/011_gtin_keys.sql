-- barcode= finds a GTIN at any length (catalogue/store-fields.ts gtinKey): a UPC-A, the same
-- code as an EAN-13 with a leading 0 and as a GTIN-14 are one product. The barcode index by its GTIN-14
-- key (zeros on the left; list-query.ts writes the same expression) replaces the one by the code as
-- written, which the record keeps. An index build only: no row is rewritten.
CREATE INDEX plants_gtin ON plants (lpad(barcode, 14, '0')) WHERE barcode IS NOT NULL;
DROP INDEX plants_barcode;

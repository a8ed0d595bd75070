-- Schema version 8: each Company's verified organization name (spec 3), written by the engine
-- with its document, so a list of approvals or Companies names them with one read of indexed
-- rows instead of decoding every document, and the Companies screen reads a page at a time in
-- name order (keyset paging on (name, identifier), names compared without case). '' until the
-- Company is next discovered.

ALTER TABLE companies ADD COLUMN name TEXT NOT NULL DEFAULT '';
CREATE INDEX companies_name ON companies (name COLLATE NOCASE, identifier);

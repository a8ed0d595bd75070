-- Schema version 8: what a list shows of each Company, written by the engine with its document:
-- its verified organization name (spec 3) and its Company Agent's poppy endpoint (spec 8.1, ''
-- when it has none). A list of approvals, Companies or Companies to talk with then reads indexed
-- rows instead of decoding every document, and the Companies screen reads a page at a time in
-- name order (keyset paging on (name, identifier), names compared without case; the index covers
-- what the list reads). Both are '' until the Company is next discovered.

ALTER TABLE companies ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE companies ADD COLUMN agent TEXT NOT NULL DEFAULT '';
CREATE INDEX companies_name ON companies (name COLLATE NOCASE, identifier, domain, agent);

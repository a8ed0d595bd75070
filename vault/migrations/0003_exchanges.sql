-- Schema version 3: the inspector's exchange log (already redacted by the caller), kept within
-- a window of age and size.

CREATE TABLE exchanges (
	id               INTEGER PRIMARY KEY AUTOINCREMENT,
	at               INTEGER NOT NULL,
	company          TEXT NOT NULL,
	direction        TEXT NOT NULL,
	method           TEXT NOT NULL,
	url              TEXT NOT NULL,
	status           INTEGER NOT NULL,
	request_headers  TEXT NOT NULL,
	request_body     BLOB NOT NULL,
	response_headers TEXT NOT NULL,
	response_body    BLOB NOT NULL,
	duration_ns      INTEGER NOT NULL,
	size             INTEGER NOT NULL
) STRICT;
CREATE INDEX exchanges_at ON exchanges (at);
CREATE INDEX exchanges_company ON exchanges (company, id);

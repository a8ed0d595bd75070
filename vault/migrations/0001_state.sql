-- Schema version 1: discovered Companies, the HTTP cache, Sessions, conversations, settings.
-- Times are INTEGER Unix nanoseconds (UTC); NULL means "not set". JSON columns are TEXT.
-- Nothing secret is ever stored here (DESIGN.md invariant 5): tokens, keys, User IDs and
-- Session JWTs live in the OS keyring.

CREATE TABLE settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT;

CREATE TABLE companies (
	identifier TEXT PRIMARY KEY,
	domain     TEXT NOT NULL,
	document   TEXT NOT NULL,
	fetched_at INTEGER NOT NULL,
	etag       TEXT NOT NULL DEFAULT '',
	expires_at INTEGER
) STRICT;

CREATE TABLE http_cache (
	url        TEXT PRIMARY KEY,
	company    TEXT NOT NULL DEFAULT '',
	body       BLOB NOT NULL,
	etag       TEXT NOT NULL DEFAULT '',
	fetched_at INTEGER NOT NULL,
	expires_at INTEGER
) STRICT;
CREATE INDEX http_cache_company ON http_cache (company);

CREATE TABLE sessions (
	sid        TEXT PRIMARY KEY,
	company    TEXT NOT NULL,
	account    TEXT NOT NULL,
	version    TEXT NOT NULL,
	extensions TEXT NOT NULL,
	started_at INTEGER NOT NULL,
	ended_at   INTEGER
) STRICT;
CREATE INDEX sessions_company ON sessions (company, account);

CREATE TABLE conversations (
	company    TEXT NOT NULL,
	id         TEXT NOT NULL,
	account    TEXT NOT NULL,
	cursor     TEXT NOT NULL DEFAULT '',
	state      TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (company, id)
) STRICT;

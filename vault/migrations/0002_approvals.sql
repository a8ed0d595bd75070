-- Schema version 2: approvals (Operations extension v2) and the append-only decision log.

CREATE TABLE approvals (
	id         TEXT PRIMARY KEY,
	company    TEXT NOT NULL,
	account    TEXT NOT NULL,
	sid        TEXT NOT NULL,
	interface  TEXT NOT NULL,
	request    TEXT NOT NULL,
	state      TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX approvals_state ON approvals (state);
CREATE INDEX approvals_company ON approvals (company, account);

CREATE TABLE approval_revisions (
	approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
	revision    INTEGER NOT NULL,
	operation   TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	PRIMARY KEY (approval_id, revision)
) STRICT;

CREATE TABLE approval_decisions (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
	revision    INTEGER NOT NULL,
	from_state  TEXT NOT NULL,
	to_state    TEXT NOT NULL,
	decision    TEXT NOT NULL,
	decided_at  INTEGER NOT NULL,
	note        TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX approval_decisions_approval ON approval_decisions (approval_id);

-- The decision log is append-only: rows are never changed. They are deleted only with their
-- approval (forget Company, reset Poppydesk).
CREATE TRIGGER approval_decisions_append_only BEFORE UPDATE ON approval_decisions
BEGIN
	SELECT RAISE(ABORT, 'the approval decision log is append-only');
END;

-- Schema version 5: the reports of tasks Poppydesk could not do that it sent to Companies
-- (spec 9.3), one per (company, task key): the text exactly as sent, after Poppydesk removed
-- secrets and the identifiers it knows (never a token, key, code or Session JWT: DESIGN.md
-- invariant 5). A row is written before the report is sent; answered_at is NULL until the
-- Company answers. Rows go with their Company.

CREATE TABLE feedback_reports (
	company     TEXT NOT NULL,
	task_key    TEXT NOT NULL,
	task        TEXT NOT NULL,
	description TEXT NOT NULL,
	status      TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	answered_at INTEGER,
	PRIMARY KEY (company, task_key)
) STRICT;
CREATE INDEX feedback_reports_created ON feedback_reports (created_at);

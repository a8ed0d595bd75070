-- Schema version 4: the transcript of each conversation (spec 8.5): one row per handled event,
-- in handling order. n is the entry's index in its conversation (0, 1, 2, ...) so a page of the
-- window is one range scan of the primary key; (company, conversation, event_id) is unique, so an
-- event handled again after a crash is not stored twice. entry is the engine's JSON of the entry
-- (Company content and the user's words; never a token, code or Session JWT: DESIGN.md
-- invariant 5). Rows go with their conversation.

CREATE TABLE conversation_entries (
	company      TEXT NOT NULL,
	conversation TEXT NOT NULL,
	n            INTEGER NOT NULL,
	event_id     TEXT NOT NULL,
	entry        TEXT NOT NULL,
	PRIMARY KEY (company, conversation, n),
	UNIQUE (company, conversation, event_id),
	FOREIGN KEY (company, conversation) REFERENCES conversations (company, id) ON DELETE CASCADE
) STRICT;

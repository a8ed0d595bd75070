-- Schema version 7: indexes for the window's long lists. Approvals are listed newest first,
-- pending ones by state and the rest by creation time, a page at a time (keyset paging on
-- (created_at, id)); a Company's conversations most recently updated first.

CREATE INDEX approvals_created ON approvals (created_at, id);
CREATE INDEX approvals_state_created ON approvals (state, created_at, id);
DROP INDEX approvals_state;
CREATE INDEX conversations_updated ON conversations (company, updated_at);

-- The exchange log's size window reads only (id, size): a covering index, so keeping the log
-- within its bytes never reads the bodies.
CREATE INDEX exchanges_size ON exchanges (id, size);

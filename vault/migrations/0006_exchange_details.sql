-- Schema version 5: what the inspector decoded from each exchange before it was redacted
-- (agentcore/inspect): the cause, the Session ID, the decoded JWT headers and claims without
-- signatures, token values or User IDs, and the findings. JSON; '' for none.

ALTER TABLE exchanges ADD COLUMN details TEXT NOT NULL DEFAULT '';

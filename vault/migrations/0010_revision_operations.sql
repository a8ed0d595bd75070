-- Schema version 10: the approvals of one operation (its operation_id, Operations 3; a
-- revision's operation column is the approval queue's record, whose "operation" member is the
-- Company's operation) found by index, so that proposing or approving an operation reads its own approvals and not every
-- finished one (their number grows with the history).

CREATE INDEX approval_revisions_operation ON approval_revisions (json_extract(operation, '$.operation.operation_id'));

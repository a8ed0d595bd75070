// The Approvals section and the approval dialog.

export { approvalsView, type ApprovalsBackend, type ApprovalsOptions } from "./view";
export { ApprovalDialog, GUARD_MS } from "./dialog";

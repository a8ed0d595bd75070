// Package approvals is the approval queue of Poppydesk's engine: a model asks for an
// action, the Company asks for approval of exact terms, the user decides in the window, and the
// action happens AT MOST ONCE.
//
// Sections implemented (Operations extension v2 unless noted):
//
//   - Operations 2, spec 3.3, 3.4: the extension is declared only when the Company lists version
//     "2" (agentcore/engine chooses the Session's extensions; TestExtensionDeclaredOnlyForV2). An
//     operation returned to a request that did not declare it (the Poppy-Extensions the API
//     request carried, apis.Result.Extensions, or the MCP connection's Session) is the Company's
//     error: it is never stored or shown, and the caller gets StatusCompanyError with
//     MessageUndeclaredOperation, and the finding goes to Config.Reporter (the Inspector). An
//     approval is sent only in a Session that declares the
//     extension (checkSession), so Poppy-Approval and the approval _meta never travel on a
//     request that doesn't.
//   - Operations 4: an operation is recognized in an API answer (HTTP 403 approval_required) and an
//     MCP tool result (isError with structuredContent.operation) through agentcore/operations; a
//     malformed operation is an error for the caller, never an approval request.
//   - Operations 5: the action is never treated as done. The pending approval is stored durably
//     (Config.Store) BEFORE the model's "waiting_for_user" or any event: Company, Session (sid),
//     account, interface, the exact request (method, URL, body / tool and arguments), every
//     revision, timestamps. Before asking, terms are checked against the request and the model's
//     intent (Item.Warnings) and a new revision is compared with the previous one (Item.Changes).
//     Approve accepts only the revision the user saw (revision and digest), only the latest, only
//     unexpired, not declined or withdrawn; Decline also withdraws an approval not yet sent. The
//     digest covers the operation AND the stored request it would send (Item.Current.Digest): when
//     the model repeats a call with another body and the Company answers with the same
//     operation, the item gets a new stored revision, a request_changed warning and a new
//     digest, and an approval with the older digest is refused (ErrRequestChanged).
//   - Operations 3 "New terms": other terms (summary, terms or expiry) under an operation_id and
//     revision the Company already used are its violation (checkReused, reusedRevision): the new
//     terms are stored so the window shows what changed, the item gets Item.Violation and a
//     WarnRevisionReused warning in Poppydesk's words, Approve refuses it (ErrRevisionReused)
//     whatever digest is presented, and no approval of it is ever sent again. An item whose
//     approval had not gone out fails; one whose approval had keeps an unknown outcome, so the
//     user isn't asked about the same action again. The caller gets StatusCompanyError, and the
//     finding goes to Config.Reporter.
//   - Operations 3 "Who can approve it": a signed-out operation only in its own Session, a
//     signed-in one in any Session of the same account (operations.CanApproveIn), checked before
//     the decision is consumed. The User is the same by construction (one User ID per Company and
//     account in the keyring), so Company, account and sid are compared.
//   - Operations 6: the approval re-sends the SAME method, URL and body with Poppy-Approval, or
//     the SAME tool and arguments with _meta "personalagentprotocol.org/approval". Each revision
//     keeps the request that returned it, so a new revision from a changed request re-sends that
//     request, through the interface it went through: when the Company answers an MCP tool call
//     with the operation_id of an item asked through its API (the same action, by its records),
//     the item's new revision is the tool call's, the model is told so, and an approval calls
//     the tool (Item.Interface is the current revision's). Idempotency-Key: the approved request has its OWN key (the first request's key does
//     not carry over), derived from the approval ID, operation_id and revision, so every retry of
//     one approval — also after a restart — carries the same key, as the Idempotency-Key draft
//     expects of retries; the operation ID is what identifies retries for the Company.
//   - Operations 7: write-before-send (TransitionApproval with the decision log, durable before the
//     request leaves). The steps before each send and after each answer are operations.BeforeSend
//     and operations.AfterSend (pure, with their tables); sendApproved persists each before it
//     acts on it, in one engine Client per round. Network errors, timeouts and 5xx are "outcome
//     unknown": the SAME approval is sent again, with bounded attempts and exponential backoff
//     through the injected Sleep, then the item stays outcome_unknown and offers CheckOutcome. A
//     refusal at the Company's door (invalid_session, a token or scope challenge,
//     extension_required: transport.ProtocolError.Refused) or a send Poppydesk could not make
//     performed nothing: after the first send the item fails; after a retry it says nothing of
//     the earlier send, so the outcome stays unknown. Poppydesk's own words (Outcome.Message)
//     never quote the Company; what may quote it is Outcome.Detail, which the model gets inside
//     the untrusted Company content. 503 (with Retry-After) and a tool's "in_progress" are polled, never counted as
//     failures. While an approval's outcome is unknown, a model request for the same action (same
//     Company and request target: method + URL, or server + tool + arguments) is held — not sent,
//     nobody asked — and a new operation for the same operation_id is not shown. An answer with a
//     NEW revision to the first send is a new decision for the user (pending again, with Changes),
//     never retried automatically; to a retry it says nothing about the first send, so the item
//     stays outcome_unknown. Recover at start sends approved, sending, retrying and outcome_unknown
//     items again with the same approval, never re-proposing them.
//   - docs/DESIGN.md invariant 1: no model path approves. The model's methods (CallAPI, CallTool, Wait)
//     take no approval argument and never change a decision; approval headers, credentials and
//     _meta in the model's input are refused ([ErrRefused]).
//
// Design notes. All state is in Config.Store, a store.Approvals (*vault.State in the app, passed
// as it is; store.NewMemoryApprovals in tests), whose records and errors agentcore/store defines:
// store.Approval, store.Revision, store.Decision, and store.ErrConflict for a compare-and-set
// that lost. The in-process locks (per action target, then per approval) only order this
// process's work, so a restarted process (or the kill test's child processes, one at a time)
// continues from the Store alone. Ideas from peers/: write-before-send and an explicit
// outcome-unknown state that blocks new approvals for the same target (the control-plane
// contract), recover never re-propose (the Operations v1 SDK client), check the binding before
// consuming (the Java framework).
//
// Nothing here is hand-written where a library exists: operations parsing, rendering, digests
// and approvals are agentcore/operations (goldmark, httpsfv); HTTP and MCP are agentcore/apis
// (the official MCP SDK and its JSON Schema library).
package approvals

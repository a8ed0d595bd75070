package approvals

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Approve records the user's approval of exactly the revision they saw and sends it (Operations
// 5, 6; docs/DESIGN.md invariants 1-3). It is for the window only: revision and digest come from the
// Item the user saw. It refuses anything but the latest, unexpired, pending revision whose digest
// (approvalDigest: the operation AND the request it would send) matches (operations.CanApprove;
// ErrRequestChanged when the user saw an earlier request under the same operation), a Session
// that can't approve the operation (operations.CanApproveIn, checked before anything is
// consumed), and any approval while another
// approval for the same action has an unknown outcome. The decision is durable (TransitionApproval,
// with the decision log) BEFORE the request leaves; then the SAME request is sent with the
// approval and retried with the SAME approval after failures (Operations 7). The returned Outcome
// is the Company's answer, or outcome_unknown / in_progress when it is not known yet.
func (q *Queue) Approve(ctx context.Context, id, revision, digest string) (*Outcome, error) {
	rec, err := q.cfg.Store.GetApproval(ctx, id)
	if err != nil {
		return nil, q.readErr(id, err)
	}
	targets := targetsOf(&rec)
	var unlocks []func()
	for t := range targets {
		unlocks = append(unlocks, q.lock("target:"+t))
	}
	releaseTargets := func() {
		for _, u := range unlocks {
			u()
		}
		unlocks = nil
	}
	defer releaseTargets()
	unlockItem := q.lock("item:" + id)
	defer unlockItem()

	if rec, err = q.cfg.Store.GetApproval(ctx, id); err != nil {
		return nil, q.readErr(id, err)
	}
	if decs, err := q.cfg.Store.Decisions(ctx, id); err != nil {
		return nil, fmt.Errorf("approvals: reading the decision log of %s: %w", id, err)
	} else if revisionReusedIn(decs) {
		return nil, fmt.Errorf("approvals: approval %s was not approved and nothing was sent: %w", id, ErrRevisionReused)
	}
	n := len(rec.Revisions)
	op, err := revisionOp(&rec, n-1)
	if err != nil {
		return nil, err
	}
	others, err := q.otherStates(ctx, &rec, op)
	if err != nil {
		return nil, err
	}
	env, err := decodeEnvelope(rec.Revisions[n-1].Operation)
	if err != nil {
		return nil, err
	}
	// The window presents the digest of the operation AND the request of the item's latest stored
	// revision (approvalDigest): a repeated call with another body under the same operation makes
	// an older digest stale (docs/DESIGN.md invariant 2). CanApprove then checks the operation part.
	opDigest := ""
	if digest == approvalDigest(op, env.Request) {
		opDigest = operations.Digest(op)
	}
	now := q.now()
	p := operations.Pending{Latest: op, State: operations.State(rec.State), Earlier: others}
	if err := operations.CanApprove(now, p, operations.Decision{OperationID: op.OperationID, Revision: revision, Digest: opDigest}); err != nil {
		if errors.Is(err, operations.ErrDigestMismatch) && sawEarlierRequest(&rec, digest) {
			return nil, fmt.Errorf("approvals: approval %s was not approved and nothing was sent: %w", id, ErrRequestChanged)
		}
		if errors.Is(err, operations.ErrRevisionExpired) && rec.State == string(operations.StatePending) {
			if terr := q.transition(ctx, &rec, rec.State, operations.StateExpired, decisionExpire, "the revision expired before the user approved it"); terr != nil {
				q.log.WarnContext(ctx, "approvals: could not record the expiry", "approval", id, "err", terr)
			}
		}
		return nil, fmt.Errorf("approvals: approval %s was not approved and nothing was sent: %w", id, err)
	}
	// Who can approve it (Operations 3), before anything is consumed.
	if err := q.checkSession(ctx, &rec); err != nil {
		return nil, fmt.Errorf("approvals: approval %s was not approved and nothing was sent: %w", id, err)
	}
	note := fmt.Sprintf("the user approved revision %s (%s) in the window", op.Revision, digest)
	if err := q.transition(ctx, &rec, rec.State, operations.StateApproved, decisionApprove, note); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("approvals: approval %s changed while the user decided (a new revision or another decision); nothing was sent, show the user the item again: %w", id, err)
		}
		return nil, fmt.Errorf("approvals: recording the approval failed, so nothing was sent; try again: %w", err)
	}
	// The approval is durable: a model call for the same action is now held; it need not wait.
	releaseTargets()
	return q.sendApproved(ctx, id)
}

// sawEarlierRequest reports whether digest is that of an earlier stored revision of the item:
// the user saw the item before the model repeated the call with another request.
func sawEarlierRequest(rec *store.Approval, digest string) bool {
	for i := 0; i < len(rec.Revisions)-1; i++ {
		env, err := decodeEnvelope(rec.Revisions[i].Operation)
		if err != nil {
			continue
		}
		if op, err := operations.Parse(env.Operation); err == nil && approvalDigest(op, env.Request) == digest {
			return true
		}
	}
	return false
}

// otherStates lists the states of the other approvals for the same action: the same Company and
// operation_id, or the same request target (Operations 7, CanAsk).
func (q *Queue) otherStates(ctx context.Context, rec *store.Approval, op *operations.Operation) ([]operations.State, error) {
	recs, err := q.related(ctx, rec.Company, op.OperationID)
	if err != nil {
		return nil, err
	}
	mine := targetsOf(rec)
	var out []operations.State
	for i := range recs {
		r := &recs[i]
		if r.ID == rec.ID || r.Company != rec.Company {
			continue
		}
		same := false
		for t := range targetsOf(r) {
			same = same || mine[t]
		}
		if latest, err := revisionOp(r, len(r.Revisions)-1); err == nil && latest.OperationID == op.OperationID {
			same = true
		}
		if same {
			st := operations.State(r.State)
			if st == operations.StateSucceeded && !mineOperation(r, op) {
				// A performed earlier action on the same target is not this action.
				continue
			}
			out = append(out, st)
		}
	}
	return out, nil
}

func mineOperation(r *store.Approval, op *operations.Operation) bool {
	latest, err := revisionOp(r, len(r.Revisions)-1)
	return err == nil && latest.OperationID == op.OperationID
}

// checkSession applies "Who can approve it" (Operations 3) to the Session the approval would be
// sent in now. The User is the same by construction: one Poppydesk keeps one User ID per
// (Company, account) in the keyring, so the comparison is of Company, account and sid. A Session
// that does not declare the Operations extension version 2 never carries an approval
// (Operations 2).
func (q *Queue) checkSession(ctx context.Context, rec *store.Approval) error {
	cl, _, err := q.client(ctx, rec.Company, rec.Account)
	if err != nil {
		return err
	}
	if !clientDeclaresOperations(cl) {
		return errUndeclaredSession
	}
	returned := operations.Origin{Company: rec.Company, SID: rec.SID, Account: rec.Account}
	current := operations.Origin{Company: cl.Identifier(), SID: cl.SID(), Account: cl.Account()}
	return operations.CanApproveIn(returned, current)
}

// transition is the compare-and-set write of one state change with its decision-log entry, then
// the event. rec.State is updated on success.
func (q *Queue) transition(ctx context.Context, rec *store.Approval, from string, to operations.State, decision, note string) error {
	if from != string(to) {
		if _, err := operations.Next(operations.State(from), eventOf(decision)); err != nil && eventOf(decision) != "" {
			return fmt.Errorf("approvals: %w", err)
		}
	}
	d := store.Decision{Revision: rec.Revisions[len(rec.Revisions)-1].Revision, To: string(to), Decision: decision, At: q.now(), Note: note}
	// The write must land even when the caller's context ended mid-send.
	if err := q.cfg.Store.TransitionApproval(context.WithoutCancel(ctx), rec.ID, from, d); err != nil {
		return err
	}
	rec.State = string(to)
	q.emit(EventState, rec.ID, rec.State)
	return nil
}

// eventOf maps a decision to the state machine's event (operations.Next), "" when it is not one.
func eventOf(decision string) operations.Event {
	switch decision {
	case decisionApprove:
		return operations.EventApprove
	case decisionDecline:
		return operations.EventDecline
	case decisionExpire:
		return operations.EventExpire
	case decisionSend, decisionResend:
		return operations.EventSend
	case decisionSucceeded:
		return operations.EventSucceeded
	case decisionFailed:
		return operations.EventFailed
	case decisionNoAnswer, decisionInProgress:
		return operations.EventNoAnswer
	}
	return ""
}

// Decline records that the user declined the revision they saw, or withdrew an approval that
// was not sent yet (Operations 5: a withdrawn approval is not sent). Once the approval is being
// sent it can no longer be withdrawn.
func (q *Queue) Decline(ctx context.Context, id, revision string) error {
	rec, err := q.cfg.Store.GetApproval(ctx, id)
	if err != nil {
		return q.readErr(id, err)
	}
	op, err := revisionOp(&rec, len(rec.Revisions)-1)
	if err != nil {
		return err
	}
	if op.Revision != revision {
		return fmt.Errorf("approvals: decline revision %q of approval %s: %w (the latest is %q); show the user the latest revision", revision, id, operations.ErrNotLatest, op.Revision)
	}
	switch operations.State(rec.State) {
	case operations.StatePending, operations.StateApproved:
	default:
		return fmt.Errorf("approvals: approval %s is %s; it can be declined only while pending or approved but not yet sent", id, rec.State)
	}
	note := "the user declined in the window"
	if rec.State == string(operations.StateApproved) {
		note = "the user withdrew the approval before it was sent"
	}
	if err := q.transition(ctx, &rec, rec.State, operations.StateDeclined, decisionDecline, note); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("approvals: approval %s changed meanwhile (it may already be on its way to the Company); read it again: %w", id, err)
		}
		return err
	}
	return nil
}

// CheckOutcome sends the same approval again to learn the outcome of an item that is approved,
// being sent or outcome_unknown (Operations 7). For any other item it returns the outcome as is.
func (q *Queue) CheckOutcome(ctx context.Context, id string) (*Outcome, error) {
	unlock := q.lock("item:" + id)
	defer unlock()
	return q.sendApproved(ctx, id)
}

// Recover runs at start: items approved but with an unknown outcome (approved, sending,
// retrying, outcome_unknown) are sent again with the SAME approval (Operations 7), never
// re-proposed. It returns after each has an outcome or ran out of attempts.
func (q *Queue) Recover(ctx context.Context) error {
	recs, err := q.cfg.Store.ListApprovals(ctx, unresolvedStates...)
	if err != nil {
		return fmt.Errorf("approvals: reading the approvals to recover: %w", err)
	}
	var errs []error
	for _, r := range recs {
		unlock := q.lock("item:" + r.ID)
		o, err := q.sendApproved(ctx, r.ID)
		unlock()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		q.log.InfoContext(ctx, "approvals: recovered an approval after a restart", "approval", r.ID, "status", o.Status)
	}
	return errors.Join(errs...)
}

// sendKind classifies the Company's answer to an approval.
type sendKind int

const (
	sentPerformed  sendKind = iota // 2xx / tool result: performed (or performed earlier: the same response)
	sentRefused                    // a definitive refusal: nothing performed
	sentNewRev                     // approval_required again: check 3 failed, nothing performed
	sentMalformed                  // approval_required with a malformed operation
	sentInProgress                 // 503 / in progress: poll
	sentNoAnswer                   // network error, timeout, 5xx: unknown
)

type sendResult struct {
	kind  sendKind
	note  resultNote
	op    *operations.Operation
	raw   json.RawMessage
	wait  time.Duration
	cause string
}

// sendApproved is the at-most-once send loop (Operations 7). The caller holds the item lock.
func (q *Queue) sendApproved(ctx context.Context, id string) (*Outcome, error) {
	attempts := 0
	var polled time.Duration
	for {
		rec, err := q.cfg.Store.GetApproval(ctx, id)
		if err != nil {
			return nil, q.readErr(id, err)
		}
		decs, err := q.cfg.Store.Decisions(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("approvals: reading the decision log of %s: %w", id, err)
		}
		if revisionReusedIn(decs) {
			// Operations 3: the revision names two sets of terms; no approval of it is sent.
			return outcomeOf(&rec, decs), nil
		}
		state := operations.State(rec.State)
		switch state {
		case operations.StateApproved, operations.StateOutcomeUnknown:
		case operations.StateSending, operations.StateRetrying:
			// A send was in flight when this process (or another) stopped: its outcome is unknown.
			if err := q.transition(ctx, &rec, rec.State, operations.StateOutcomeUnknown, decisionNoAnswer,
				resultNote{Message: "a send of the approval was interrupted (Poppydesk stopped); the same approval is sent again"}.encode()); err != nil {
				return nil, fmt.Errorf("approvals: recording an interrupted send of %s: %w", id, err)
			}
			continue
		default:
			return outcomeOf(&rec, decs), nil
		}
		num, ok := approvedRevision(decs)
		if !ok {
			return nil, fmt.Errorf("approvals: approval %s is %s but the decision log has no approval; it is not sent", id, rec.State)
		}
		var env *envelope
		for _, rv := range rec.Revisions {
			if rv.Revision == num {
				env, err = decodeEnvelope(rv.Operation)
				if err != nil {
					return nil, err
				}
			}
		}
		if env == nil {
			return nil, fmt.Errorf("approvals: the approved revision %d of %s is not stored", num, id)
		}
		op, err := operations.Parse(env.Operation)
		if err != nil {
			return nil, fmt.Errorf("approvals: approved revision of %s: %w", id, err)
		}
		if err := operations.CanSend(q.now(), state, op); err != nil {
			if state == operations.StateApproved {
				if terr := q.transition(ctx, &rec, rec.State, operations.StateExpired, decisionExpire, resultNote{Message: "not performed: the terms expired before the approval could be sent"}.encode()); terr != nil {
					return nil, terr
				}
				return q.outcome(ctx, &rec)
			}
			o := outcomeOf(&rec, decs)
			o.Message = "the approval was sent but its outcome is unknown, and the terms have expired, so the Company may have forgotten the operation and it is not sent again (Operations 7); check at the Company (for example the order) whether it was performed before asking the user again"
			return o, nil
		}
		if err := q.checkSession(ctx, &rec); err != nil {
			if state == operations.StateApproved {
				if terr := q.transition(ctx, &rec, rec.State, operations.StateFailed, decisionNotSendable,
					resultNote{Message: "not sent, not performed: " + err.Error()}.encode()); terr != nil {
					return nil, terr
				}
				return q.outcome(ctx, &rec)
			}
			o := outcomeOf(&rec, decs)
			o.Message = "the approval's outcome is unknown and it can't be sent again from this Session: " + err.Error()
			return o, nil
		}
		to, decision := operations.StateSending, decisionSend
		if state == operations.StateOutcomeUnknown {
			to, decision = operations.StateRetrying, decisionResend
		}
		// Write before send (docs/DESIGN.md invariant 3).
		if err := q.transition(ctx, &rec, rec.State, to, decision, fmt.Sprintf("approval of revision %s (attempt %d)", op.Revision, attempts+1)); err != nil {
			return nil, fmt.Errorf("approvals: recording the send of %s failed, so it was not sent: %w", id, err)
		}
		sendStart := q.now()
		res := q.send(ctx, &rec, env.Request, op)
		q.log.DebugContext(ctx, "approvals: approval sent", "approval", id, "kind", int(res.kind), "took", q.now().Sub(sendStart))
		switch res.kind {
		case sentPerformed:
			if err := q.transition(ctx, &rec, rec.State, operations.StateSucceeded, decisionSucceeded, res.note.encode()); err != nil {
				return nil, err
			}
			return q.outcome(ctx, &rec)
		case sentRefused:
			if err := q.transition(ctx, &rec, rec.State, operations.StateFailed, decisionFailed, res.note.encode()); err != nil {
				return nil, err
			}
			return q.outcome(ctx, &rec)
		case sentNewRev:
			return q.answeredWithNewRevision(ctx, &rec, to, res, env.Request)
		case sentMalformed:
			res.note.Message = "the Company answered the approval with a malformed operation, so whether it performed the action is not known; it is not retried automatically: " + res.cause
			if err := q.transition(ctx, &rec, rec.State, operations.StateOutcomeUnknown, decisionNoAnswer, res.note.encode()); err != nil {
				return nil, err
			}
			return q.outcome(ctx, &rec)
		case sentInProgress:
			res.note.Message = "the Company is performing the action (or doesn't know yet) and asked to wait " + res.wait.String() + "; Poppydesk asks again with the same approval"
			if err := q.transition(ctx, &rec, rec.State, operations.StateOutcomeUnknown, decisionInProgress, res.note.encode()); err != nil {
				return nil, err
			}
			if polled+res.wait > q.cfg.MaxPoll {
				return q.outcome(ctx, &rec)
			}
			if err := q.cfg.Sleep(ctx, res.wait); err != nil {
				return q.outcome(context.WithoutCancel(ctx), &rec)
			}
			polled += res.wait
		case sentNoAnswer:
			attempts++
			res.note.Message = fmt.Sprintf("no usable answer to the approval (%s); whether the Company performed the action is not known; the same approval is sent again (attempt %d of %d)", res.cause, attempts, q.cfg.MaxAttempts)
			if err := q.transition(ctx, &rec, rec.State, operations.StateOutcomeUnknown, decisionNoAnswer, res.note.encode()); err != nil {
				return nil, err
			}
			if attempts >= q.cfg.MaxAttempts || ctx.Err() != nil {
				return q.outcome(context.WithoutCancel(ctx), &rec)
			}
			if err := q.cfg.Sleep(ctx, q.backoff(attempts)); err != nil {
				return q.outcome(context.WithoutCancel(ctx), &rec)
			}
		}
	}
}

func (q *Queue) backoff(attempt int) time.Duration {
	d := q.cfg.Backoff
	for i := 1; i < attempt && d < q.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, q.cfg.MaxBackoff)
}

// answeredWithNewRevision: the Company answered the approval with a new revision (check 3 failed,
// Operations 6). After the first send, nothing was performed: the new revision is a new decision
// for the user (never retried automatically). After a retry, it does not say whether the first
// send was performed (Operations 7): the item stays outcome_unknown.
func (q *Queue) answeredWithNewRevision(ctx context.Context, rec *store.Approval, from operations.State, res sendResult, req *request) (*Outcome, error) {
	env, err := json.Marshal(envelope{Operation: res.raw, Request: req})
	if err != nil {
		return nil, err
	}
	if _, reused := reusedRevision(rec, res.op); reused {
		// Other terms under a revision already used (Operations 3): after an approval went out,
		// the outcome stays unknown and nothing more is sent.
		return q.revisionReused(ctx, rec, res.op, env)
	}
	next := rec.Revisions[len(rec.Revisions)-1].Revision + 1
	newState := operations.StatePending
	msg := "the Company did not accept the approval and sent new terms instead; nothing was performed; the user must decide about the new terms"
	if from == operations.StateRetrying {
		newState = operations.StateOutcomeUnknown
		msg = "the Company answered the repeated approval with new terms, which does not say whether the first approval was performed (Operations 7); the user is not asked about the new terms until that is known — check at the Company (for example the order)"
	}
	if err := q.cfg.Store.AddRevision(context.WithoutCancel(ctx), rec.ID, store.Revision{Revision: next, Operation: env, Received: q.now()}, string(newState)); err != nil {
		return nil, fmt.Errorf("approvals: storing the Company's new revision for %s: %w", rec.ID, err)
	}
	rec.Revisions = append(rec.Revisions, store.Revision{Revision: next})
	rec.State = string(newState)
	res.note.Message = msg
	if err := q.cfg.Store.TransitionApproval(context.WithoutCancel(ctx), rec.ID, string(newState),
		store.Decision{Revision: next, To: string(newState), Decision: decisionNewRevision, At: q.now(), Note: res.note.encode()}); err != nil {
		q.log.WarnContext(ctx, "approvals: could not log the new revision", "approval", rec.ID, "err", err)
	}
	q.emit(EventRevision, rec.ID, rec.State)
	fresh, err := q.cfg.Store.GetApproval(ctx, rec.ID)
	if err != nil {
		return nil, q.readErr(rec.ID, err)
	}
	o, err := q.outcome(ctx, &fresh)
	if err == nil && newState == operations.StatePending {
		o.Message = msg
	}
	return o, err
}

// idempotencyKey is the Idempotency-Key of the request with the approval: its own key, not the
// first request's (Operations 6), derived from the approval and the approved revision, so every
// retry of the same approval, also after a restart, carries the same key
// (draft-ietf-httpapi-idempotency-key-header: retries of one request reuse its key). The
// operation ID is what identifies the retries for the Company (Operations 7); the key only helps
// Companies that also implement the draft. A UUID with version 8 (RFC 9562, custom).
func idempotencyKey(approvalID string, op *operations.Operation) string {
	h := sha256.Sum256([]byte("poppydesk-approval-idempotency-key\x00" + approvalID + "\x00" + op.OperationID + "\x00" + op.Revision))
	b := h[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// send sends the SAME request with the approval once and classifies the answer. An approval goes
// where the revision it approves came from: a revision that came in a conversation is approved
// in that conversation (Operations 6), even when the first one came through the API.
func (q *Queue) send(ctx context.Context, rec *store.Approval, req *request, op *operations.Operation) sendResult {
	if rec.Interface == InterfaceConversation || req.Conversation != "" {
		return q.sendConversation(ctx, rec, req, op) // conversation.go
	}
	cl, _, err := q.client(ctx, rec.Company, rec.Account)
	if err != nil {
		return sendResult{kind: sentNoAnswer, cause: err.Error()}
	}
	if rec.Interface == InterfaceMCP {
		api, err := findAPI(cl.Company(), "mcp", req.Server)
		if err != nil {
			return sendResult{kind: sentNoAnswer, cause: err.Error()}
		}
		call := apis.ToolCall{Name: req.Tool, Arguments: req.Arguments}.WithApproval(op.OperationID, op.Revision)
		res, err := q.callTool(ctx, cl, api, call)
		if err != nil {
			return sendResult{kind: sentNoAnswer, cause: err.Error()}
		}
		note := resultNote{Body: res.StructuredContent, Text: res.Text, Content: res.Content}
		if nop, ok, perr := operations.FromToolResult(res.IsError, res.StructuredContent); ok {
			if perr != nil {
				return sendResult{kind: sentMalformed, note: note, cause: perr.Error()}
			}
			return sendResult{kind: sentNewRev, note: note, op: nop, raw: rawToolOperation(res.StructuredContent)}
		}
		if res.IsError {
			if wait, ok := toolInProgress(res.StructuredContent); ok {
				return sendResult{kind: sentInProgress, note: note, wait: wait}
			}
			note.Message = "not performed: the tool returned an error to the approved call"
			return sendResult{kind: sentRefused, note: note}
		}
		return sendResult{kind: sentPerformed, note: note}
	}
	ac, err := q.cfg.Engine.APIClient(ctx, rec.Company, rec.Account)
	if err != nil {
		return sendResult{kind: sentNoAnswer, cause: err.Error()}
	}
	hv, err := operations.ApprovalHeader(op.OperationID, op.Revision)
	if err != nil {
		return sendResult{kind: sentRefused, note: resultNote{Message: "not sent: " + err.Error()}}
	}
	base := &apis.Request{Method: req.Method, URL: req.URL, Header: httpHeader(req.Header), Body: []byte(req.Body)}
	if len(req.Body) == 0 {
		base.Body = nil
	}
	r := base.Again(http.Header{operations.HeaderName: {hv}}, false)
	r.Header.Set("Idempotency-Key", idempotencyKey(rec.ID, op))
	res, err := ac.Send(ctx, r)
	if res == nil {
		cause := "no response"
		if err != nil {
			cause = err.Error()
		}
		return sendResult{kind: sentNoAnswer, cause: cause}
	}
	note := resultNote{HTTPStatus: res.Status}
	if json.Valid(res.Body) {
		note.Body = json.RawMessage(res.Body)
	} else if len(res.Body) > 0 {
		note.Text = string(res.Body)
	}
	var pe *transport.ProtocolError
	if errors.As(err, &pe) && pe.Description != "" {
		note.Text = pe.Description
	}
	switch {
	case res.Status < 300:
		return sendResult{kind: sentPerformed, note: note}
	case res.Status == http.StatusServiceUnavailable:
		wait := time.Second
		if d, ok := transport.ParseRetryAfter(res.Header.Get("Retry-After"), q.now()); ok {
			wait = d
		}
		return sendResult{kind: sentInProgress, note: note, wait: min(max(wait, 0), maxRetryAfter)}
	case res.Status >= 500 || res.Status == http.StatusTooManyRequests:
		return sendResult{kind: sentNoAnswer, note: note, cause: fmt.Sprintf("HTTP %d", res.Status)}
	}
	if nop, ok, perr := operations.FromAPIResponse(res.Status, res.Body); ok {
		if perr != nil {
			return sendResult{kind: sentMalformed, note: note, cause: perr.Error()}
		}
		return sendResult{kind: sentNewRev, note: note, op: nop, raw: rawOperation(res.Body)}
	}
	if protocolLevel(res.Status, pe) {
		// A Session, version or token refusal is about this attempt, not the action: an earlier
		// attempt (ours, or one the HTTP stack replayed on a fresh connection) may have been
		// performed, so the outcome stays unknown and the same approval is sent again.
		cause := fmt.Sprintf("HTTP %d", res.Status)
		if pe != nil && pe.Code != "" {
			cause += " " + pe.Code
		}
		return sendResult{kind: sentNoAnswer, note: note, cause: cause}
	}
	note.Message = fmt.Sprintf("not performed: the Company refused the approved request (HTTP %d)", res.Status)
	return sendResult{kind: sentRefused, note: note}
}

// toolInProgress recognizes a tool's "still being performed" answer (Operations 7: "or as it
// does for work that hasn't finished"): isError with structuredContent.status "in_progress" and
// an optional retry_after in seconds, the form the reference Company uses.
func toolInProgress(sc json.RawMessage) (time.Duration, bool) {
	var v struct {
		Status     string  `json:"status"`
		RetryAfter float64 `json:"retry_after"`
	}
	if json.Unmarshal(sc, &v) != nil || v.Status != "in_progress" {
		return 0, false
	}
	wait := time.Second
	if v.RetryAfter > 0 {
		wait = time.Duration(v.RetryAfter * float64(time.Second))
	}
	return min(wait, maxRetryAfter), true
}

// protocolLevel reports whether an error answer is a refusal of the Session, the protocol version
// or the token (spec 5.3, 3.4, 5.5, 7) rather than the Company's answer about the action.
func protocolLevel(status int, pe *transport.ProtocolError) bool {
	if status == http.StatusUnauthorized {
		return true
	}
	if pe == nil {
		return false
	}
	switch pe.Code {
	case transport.CodeInvalidSession, transport.CodeSessionEnded, transport.CodeVersionUnsupported, transport.CodeInvalidToken,
		transport.CodeInsufficientScope, transport.CodeRateLimited, transport.CodeUseDPoPNonce:
		return true
	}
	return false
}

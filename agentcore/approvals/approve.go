package approvals

import (
	"context"
	"errors"
	"fmt"

	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/store"
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
	if _, err := q.sendingClient(ctx, &rec); err != nil {
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

// checkSession applies "Who can approve it" (Operations 3) to the Session of cl, the one the
// approval would be sent in now. The User is the same by construction: one Poppydesk keeps one
// User ID per (Company, account) in the keyring, so the comparison is of Company, account and
// sid. A Session that does not declare the Operations extension version 2 never carries an
// approval (Operations 2).
func checkSession(cl *engine.Client, rec *store.Approval) error {
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

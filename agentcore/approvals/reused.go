package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// WarnRevisionReused is the code of the Item warning that the Company sent other terms (summary,
// terms or expiry) under a revision of the operation it had already used: Operations 3 "New
// terms" says a Company MUST NOT give two different sets of terms the same revision, because an
// approval names only the operation_id and the revision, so the Company could apply it to either.
const WarnRevisionReused = "revision_reused"

// decisionRevisionReused is the decision-log entry of a reused revision: the item can no longer
// be approved, and no approval of it is sent again.
const decisionRevisionReused = "revision_reused"

// ErrRevisionReused matches an Approve refused because the Company reused a revision for other
// terms: nothing was approved or sent, and this is the Company's error, not the user's or the
// model's.
var ErrRevisionReused = errors.New("the Company changed the terms of this operation without giving them a new revision (Operations 3), so no approval can say which terms it covers")

// revisionReusedWords is the dialog's explanation (Poppydesk's words; the revision, an ID of
// spec 8.2 characters, is the only value from the Company).
func revisionReusedWords(revision string, sent bool) string {
	s := fmt.Sprintf("The Company changed the terms without giving them a new version: it sent other terms under version %s, which it had already used for the terms shown before. "+
		"The Operations rules forbid this (Operations extension, section 3), because an approval names only the version, so the Company could apply it to either set of terms. "+
		"This is the Company's error. ", revision)
	if sent {
		return s + "Your earlier approval had already been sent, so whether the Company acted on it is not known; Poppydesk sends nothing more for it. " +
			"Check at the Company (for example the order) what happened before you approve anything like it again."
	}
	return s + "Poppydesk sent no approval for these terms and does not let you approve them; nothing was performed. " +
		"If you still want this, ask your agent to request it again, and tell the Company if it keeps happening."
}

// messageRevisionReused is the model's message (it quotes nothing from the Company).
const messageRevisionReused = "not performed and nothing to approve: the Company sent other terms under a revision of this operation it had already used, " +
	"which the Operations rules forbid (Operations 3: a revision names one set of terms), so no approval can say which terms it covers. " +
	"This is the Company's error, not yours: Poppydesk told the user in its window and sends no approval for this operation. " +
	"Tell the user the Company could not make a valid offer; request it again only if the user asks"

// messageRevisionReusedSent is the model's message when an approval had already been sent.
const messageRevisionReusedSent = "outcome unknown: the user's approval had been sent, and the Company then sent other terms under the same revision of this operation, " +
	"which the Operations rules forbid (Operations 3). Poppydesk sends nothing more for it and does not know whether the Company acted on the approval. " +
	"This is the Company's error, not yours. Do not request the same action again; let the user check at the Company"

// reusedRevision reports whether op has the operation_id and revision of a stored revision of rec
// but other terms (summary, terms or expiry: operations.Digest), and returns that revision.
func reusedRevision(rec *store.Approval, op *operations.Operation) (*operations.Operation, bool) {
	for i := range rec.Revisions {
		prev, err := revisionOp(rec, i)
		if err == nil && prev.OperationID == op.OperationID && prev.Revision == op.Revision && operations.Digest(prev) != operations.Digest(op) {
			return prev, true
		}
	}
	return nil, false
}

// revisionReusedIn reports whether the decision log records a reused revision.
func revisionReusedIn(decs []store.Decision) bool {
	for _, d := range decs {
		if d.Decision == decisionRevisionReused {
			return true
		}
	}
	return false
}

// revisionReused records that the Company sent other terms under a revision it had already used
// (Operations 3): the new terms are stored as the item's latest revision, so the window shows
// what the Company changed, and the item can no longer be approved or sent. An item whose
// approval was never sent (pending, approved) fails: nothing was performed. One whose approval
// went out (sending, retrying, outcome unknown, or answered with the reused revision) keeps an
// unknown outcome, so nothing new is asked for the same action, and nothing more is sent. The
// caller holds the item lock.
func (q *Queue) revisionReused(ctx context.Context, rec *store.Approval, op *operations.Operation, env json.RawMessage) (*Outcome, error) {
	sent := false
	switch operations.State(rec.State) {
	case operations.StatePending, operations.StateApproved:
	case operations.StateSending, operations.StateRetrying, operations.StateOutcomeUnknown:
		sent = true
	default:
		return nil, fmt.Errorf("approvals: approval %s is %s; a reused revision changes nothing", rec.ID, rec.State)
	}
	newState, msg := operations.StateFailed, messageRevisionReused
	if sent {
		newState, msg = operations.StateOutcomeUnknown, messageRevisionReusedSent
	}
	ctx = context.WithoutCancel(ctx) // what the Company did is recorded even if the caller gave up
	next := rec.Revisions[len(rec.Revisions)-1].Revision + 1
	if err := q.cfg.Store.AddRevision(ctx, rec.ID, store.Revision{Revision: next, Operation: env, Received: q.now()}, string(newState)); err != nil {
		return nil, fmt.Errorf("approvals: recording the Company's reused revision for %s: %w", rec.ID, err)
	}
	note := resultNote{Message: msg}.encode()
	if err := q.cfg.Store.TransitionApproval(ctx, rec.ID, string(newState),
		store.Decision{Revision: next, To: string(newState), Decision: decisionRevisionReused, At: q.now(), Note: note}); err != nil {
		return nil, fmt.Errorf("approvals: recording the Company's reused revision for %s: %w", rec.ID, err)
	}
	q.log.WarnContext(ctx, "approvals: the Company sent other terms under a revision it had already used; the approval can't be given or sent (Operations 3)",
		"approval", rec.ID, "company", rec.Company, "operation_id", op.OperationID, "revision", op.Revision, "state", string(newState))
	q.emit(EventRevision, rec.ID, string(newState))
	fresh, err := q.cfg.Store.GetApproval(ctx, rec.ID)
	if err != nil {
		return nil, q.readErr(rec.ID, err)
	}
	return q.outcome(ctx, &fresh)
}

// checkReused looks for a revision the Company already used for other terms among the Company's
// approvals of the same operation (recs, from related): a stored revision with op's operation_id
// and revision whose terms differ, or one already recorded as reused. It returns handled=false
// when there is none. Otherwise an active item records the violation (revisionReused) and a
// finished one stays as it is; either way nothing new is stored or asked, and the caller gets
// StatusCompanyError (or the item's unknown outcome). The caller holds the target lock.
func (q *Queue) checkReused(ctx context.Context, recs []store.Approval, company string, op *operations.Operation, env json.RawMessage) (*Outcome, bool, error) {
	for i := range recs {
		r := &recs[i]
		if r.Company != company || !hasRevision(r, op) {
			continue
		}
		_, differs := reusedRevision(r, op)
		decs, err := q.cfg.Store.Decisions(ctx, r.ID)
		if err != nil {
			return nil, true, fmt.Errorf("approvals: reading the decision log of %s: %w", r.ID, err)
		}
		already := revisionReusedIn(decs)
		if !differs && !already {
			continue
		}
		if !already {
			switch operations.State(r.State) {
			case operations.StatePending, operations.StateApproved, operations.StateSending, operations.StateRetrying, operations.StateOutcomeUnknown:
				unlock := q.lock("item:" + r.ID)
				defer unlock()
				fresh, err := q.cfg.Store.GetApproval(ctx, r.ID)
				if err != nil {
					return nil, true, q.readErr(r.ID, err)
				}
				o, err := q.revisionReused(ctx, &fresh, op, env)
				return o, true, err
			}
		}
		o := outcomeOf(r, decs)
		if !already || o.Status != StatusCompanyError {
			o = &Outcome{Status: StatusCompanyError, ApprovalID: r.ID, Message: messageRevisionReused}
		}
		return o, true, nil
	}
	return nil, false, nil
}

// hasRevision reports whether rec stores a revision with op's operation_id and revision.
func hasRevision(rec *store.Approval, op *operations.Operation) bool {
	for i := range rec.Revisions {
		if prev, err := revisionOp(rec, i); err == nil && prev.OperationID == op.OperationID && prev.Revision == op.Revision {
			return true
		}
	}
	return false
}

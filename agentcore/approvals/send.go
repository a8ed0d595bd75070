package approvals

// The approval's way to the wire (Operations 6, 7; docs/DESIGN.md invariant 3). sendApproved
// takes the steps of operations.BeforeSend and operations.AfterSend, the pure functions with the
// transitions, and persists each step before it acts on it. Each round opens one engine Client,
// which both decides whether the Session can carry the approval and sends it. Each send kind —
// API (sendAPI), MCP (sendMCP), conversation (sendConversation, conversation.go) — is its own
// function and reads the Company's answer as an operations.Answer.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// sendResult is one send of an approval: the Company's answer as an operations.Answer, with what
// the decision log keeps of it.
type sendResult struct {
	answer operations.Answer
	note   resultNote
	op     *operations.Operation // AnswerNewRevision: the new revision
	raw    json.RawMessage       // its JSON as sent
	wait   time.Duration         // AnswerInProgress: how long the Company asked to wait
	// why, for an answer that says nothing of the action (none, turned away, malformed): in
	// Poppydesk's words, never quoting the Company.
	why string
}

// approvedItem is an item on its way to the wire: the record, its decision log, and the approved
// revision's operation and the request it re-sends (Operations 6).
type approvedItem struct {
	rec  store.Approval
	decs []store.Decision
	op   *operations.Operation
	req  *request
}

// budget is what one sendApproved may still spend: sends without a usable answer (MaxAttempts)
// and time polling an operation in progress (MaxPoll).
type budget struct {
	attempts int
	polled   time.Duration
}

// sendApproved is the at-most-once send loop (Operations 7): a round per send, until the outcome
// is known or the budget is spent. The caller holds the item lock.
func (q *Queue) sendApproved(ctx context.Context, id string) (*Outcome, error) {
	var b budget
	for {
		it, out, err := q.approvedItem(ctx, id)
		if out != nil || err != nil {
			return out, err
		}
		out, again, err := q.sendRound(ctx, it, &b)
		if !again {
			return out, err
		}
	}
}

// approvedItem reads the item and its approved revision. It returns the outcome instead when
// nothing is to be sent: the item is not approved or unknown (or being sent), or its revision
// was reused for other terms (Operations 3).
func (q *Queue) approvedItem(ctx context.Context, id string) (*approvedItem, *Outcome, error) {
	rec, err := q.cfg.Store.GetApproval(ctx, id)
	if err != nil {
		return nil, nil, q.readErr(id, err)
	}
	decs, err := q.cfg.Store.Decisions(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("approvals: reading the decision log of %s: %w", id, err)
	}
	switch operations.State(rec.State) {
	case operations.StateApproved, operations.StateSending, operations.StateRetrying, operations.StateOutcomeUnknown:
	default:
		return nil, outcomeOf(&rec, decs), nil
	}
	if revisionReusedIn(decs) {
		// Operations 3: the revision names two sets of terms; no approval of it is sent.
		return nil, outcomeOf(&rec, decs), nil
	}
	num, ok := approvedRevision(decs)
	if !ok {
		return nil, nil, fmt.Errorf("approvals: approval %s is %s but the decision log has no approval; it is not sent", id, rec.State)
	}
	for i, rv := range rec.Revisions {
		if rv.Revision != num {
			continue
		}
		env, err := decodeEnvelope(rv.Operation)
		if err != nil {
			return nil, nil, err
		}
		op, err := revisionOp(&rec, i)
		if err != nil {
			return nil, nil, err
		}
		return &approvedItem{rec: rec, decs: decs, op: op, req: env.Request}, nil, nil
	}
	return nil, nil, fmt.Errorf("approvals: the approved revision %d of %s is not stored", num, id)
}

// sendRound is one round: the step before the send (persisted first: write before send), the
// send in one engine Client, and the step after the Company's answer. again says whether to go
// on with another round.
func (q *Queue) sendRound(ctx context.Context, it *approvedItem, b *budget) (out *Outcome, again bool, err error) {
	state := operations.State(it.rec.State)
	cl, notSendable := q.sendingClient(ctx, &it.rec)
	before, err := operations.BeforeSend(state, it.op.Expired(q.now()), notSendable == nil)
	if err != nil {
		return outcomeOf(&it.rec, it.decs), false, nil
	}
	if before.Then != operations.ThenSend {
		return q.notSent(ctx, it, before, notSendable)
	}
	note := fmt.Sprintf("approval of revision %s (attempt %d)", it.op.Revision, b.attempts+1)
	if state == operations.StateSending || state == operations.StateRetrying {
		note = resultNote{Message: "a send of the approval was interrupted (Poppydesk stopped); the same approval is sent again"}.encode()
	}
	if err := q.transition(ctx, &it.rec, it.rec.State, before.To, before.Log, note); err != nil {
		return nil, false, fmt.Errorf("approvals: recording the send of %s failed, so it was not sent: %w", it.rec.ID, err)
	}
	if before.To == operations.StateOutcomeUnknown {
		return nil, true, nil // an interrupted send: the next round sends the same approval again
	}
	start := q.now()
	res := q.send(ctx, cl, &it.rec, it.req, it.op)
	q.log.DebugContext(ctx, "approvals: approval sent", "approval", it.rec.ID, "answer", string(res.answer), "took", q.now().Sub(start))
	after, err := operations.AfterSend(before.To, res.answer)
	if err != nil {
		return nil, false, fmt.Errorf("approvals: %w", err)
	}
	return q.afterSend(ctx, it, before.To, after, res, b)
}

// sendingClient is the engine Client the approval would be sent in, and why it can't be, when
// it can't (Operations 2, 3): the one Client of the round, which checks and sends.
func (q *Queue) sendingClient(ctx context.Context, rec *store.Approval) (*engine.Client, error) {
	cl, _, err := q.client(ctx, rec.Company, rec.Account)
	if err != nil {
		return nil, err
	}
	return cl, checkSession(cl, rec)
}

// notSent is a round whose step before the send sends nothing: the revision expired, or the
// Session can't carry the approval (why). An approval not sent yet then expires or fails; one
// sent earlier keeps its unknown outcome, and the outcome says why nothing more is sent.
func (q *Queue) notSent(ctx context.Context, it *approvedItem, step operations.Step, why error) (*Outcome, bool, error) {
	var own, company string
	if why != nil {
		own, company = wordsOf(why)
	}
	if step.Log != "" {
		note := resultNote{Message: "not performed: the terms expired before the approval could be sent"}
		if step.Log == operations.LogNotSendable {
			note = resultNote{Message: "not sent, not performed: " + own, Detail: company}
		}
		if err := q.transition(ctx, &it.rec, it.rec.State, step.To, step.Log, note.encode()); err != nil {
			return nil, false, err
		}
		out, err := q.outcome(ctx, &it.rec)
		return out, false, err
	}
	o := outcomeOf(&it.rec, it.decs)
	if why != nil {
		o.Message, o.Detail = "the approval's outcome is unknown and it can't be sent again from this Session: "+own, company
	} else {
		o.Message = "the approval was sent but its outcome is unknown, and the terms have expired, so the Company may have forgotten the operation and it is not sent again (Operations 7); check at the Company (for example the order) whether it was performed before asking the user again"
	}
	return o, false, nil
}

// afterSend persists the step after the Company's answer and does what it says: stop, ask the
// user about a new revision, poll, or send the same approval again within the budget.
func (q *Queue) afterSend(ctx context.Context, it *approvedItem, from operations.State, step operations.Step, res sendResult, b *budget) (*Outcome, bool, error) {
	if step.Log == operations.LogNewRevision {
		out, err := q.answeredWithNewRevision(ctx, &it.rec, from, res, it.req)
		return out, false, err
	}
	if step.Then == operations.ThenRetry {
		b.attempts++
	}
	note := res.note
	note.Message = q.afterMessage(from, step, res, b)
	if err := q.transition(ctx, &it.rec, it.rec.State, step.To, step.Log, note.encode()); err != nil {
		return nil, false, err
	}
	switch step.Then {
	case operations.ThenPoll:
		if b.polled+res.wait > q.cfg.MaxPoll {
			break
		}
		if err := q.cfg.Sleep(ctx, res.wait); err != nil {
			break
		}
		b.polled += res.wait
		return nil, true, nil
	case operations.ThenRetry:
		if b.attempts >= q.cfg.MaxAttempts || ctx.Err() != nil {
			break
		}
		if err := q.cfg.Sleep(ctx, q.backoff(b.attempts)); err != nil {
			break
		}
		return nil, true, nil
	}
	out, err := q.outcome(context.WithoutCancel(ctx), &it.rec)
	return out, false, err
}

// afterMessage is Poppydesk's words for the step after an answer (the send kinds' own words, for
// a refusal, stay).
func (q *Queue) afterMessage(from operations.State, step operations.Step, res sendResult, b *budget) string {
	switch {
	case step.Log == operations.LogSucceeded || step.Log == operations.LogFailed && res.answer == operations.AnswerRefused:
		return res.note.Message
	case step.Log == operations.LogFailed:
		return "not performed: " + res.why + "; nothing of it was handled, so the approval is not sent again"
	case res.answer == operations.AnswerMalformed:
		return "the Company answered the approval with a malformed operation, so whether it performed the action is not known; it is not retried automatically"
	case res.answer == operations.AnswerInProgress:
		return "the Company is performing the action (or doesn't know yet) and asked to wait " + res.wait.String() + "; Poppydesk asks again with the same approval"
	case from == operations.StateRetrying && res.answer == operations.AnswerTurnedAway:
		return fmt.Sprintf("the repeated approval was not handled (%s), which says nothing about the earlier send; whether the Company performed the action is not known; the same approval is sent again (attempt %d of %d)", res.why, b.attempts, q.cfg.MaxAttempts)
	}
	return fmt.Sprintf("no usable answer to the approval (%s); whether the Company performed the action is not known; the same approval is sent again (attempt %d of %d)", res.why, b.attempts, q.cfg.MaxAttempts)
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

// send sends the SAME request with the approval once, through the interface the approved
// revision came from (Operations 6): a revision that came in a conversation is approved in that
// conversation, one that came from an MCP tool call with that tool call, one from an API request
// with that request — whatever interface the item's first revision came through.
func (q *Queue) send(ctx context.Context, cl *engine.Client, rec *store.Approval, req *request, op *operations.Operation) sendResult {
	switch interfaceOf(req) {
	case InterfaceConversation:
		return q.sendConversation(ctx, rec, req, op) // conversation.go
	case InterfaceMCP:
		return q.sendMCP(ctx, cl, req, op)
	}
	return q.sendAPI(ctx, cl, rec, req, op)
}

// interfaceOf is the interface a revision's request went through (each request names its own).
func interfaceOf(req *request) string {
	switch {
	case req.Conversation != "":
		return InterfaceConversation
	case req.Tool != "":
		return InterfaceMCP
	}
	return InterfaceAPI
}

// sendAPI sends the API request again with Poppy-Approval and its own Idempotency-Key
// (Operations 6 "APIs").
func (q *Queue) sendAPI(ctx context.Context, cl *engine.Client, rec *store.Approval, req *request, op *operations.Operation) sendResult {
	ac, err := cl.APIs()
	if err != nil {
		return notSentResult(err)
	}
	hv, err := operations.ApprovalHeader(op.OperationID, op.Revision)
	if err != nil {
		return notSentResult(err)
	}
	base := &apis.Request{Method: req.Method, URL: req.URL, Header: httpHeader(req.Header), Body: []byte(req.Body)}
	if len(req.Body) == 0 {
		base.Body = nil
	}
	r := base.Again(http.Header{operations.HeaderName: {hv}}, false)
	r.Header.Set("Idempotency-Key", idempotencyKey(rec.ID, op))
	res, err := ac.Send(ctx, r)
	if res == nil {
		return errorResult(err)
	}
	return q.apiAnswer(res, err)
}

// apiAnswer reads an API's answer to the approved request (Operations 4, 6, 7).
func (q *Queue) apiAnswer(res *apis.Result, err error) sendResult {
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
	status := fmt.Sprintf("HTTP %d", res.Status)
	switch {
	case res.Status < 300:
		return sendResult{answer: operations.AnswerPerformed, note: note}
	case res.Status == http.StatusServiceUnavailable:
		wait := time.Second
		if d, ok := transport.ParseRetryAfter(res.Header.Get("Retry-After"), q.now()); ok {
			wait = d
		}
		return sendResult{answer: operations.AnswerInProgress, note: note, wait: min(max(wait, 0), maxRetryAfter)}
	case res.Status >= 500 || res.Status == http.StatusTooManyRequests:
		return sendResult{answer: operations.AnswerNone, note: note, why: "the Company answered " + status}
	}
	if nop, ok, perr := operations.FromAPIResponse(res.Status, res.Body); ok {
		return newRevisionResult(note, nop, rawOperation(res.Body), perr)
	}
	if pe != nil && pe.Refused() {
		return sendResult{answer: operations.AnswerTurnedAway, note: note, why: "the Company refused it at its door (" + status + "), before handling it"}
	}
	note.Message = fmt.Sprintf("not performed: the Company refused the approved request (%s)", status)
	return sendResult{answer: operations.AnswerRefused, note: note}
}

// sendMCP calls the same tool again with the same arguments and the approval in _meta
// (Operations 6 "MCP"), on the queue's connection of the Client's Session.
func (q *Queue) sendMCP(ctx context.Context, cl *engine.Client, req *request, op *operations.Operation) sendResult {
	api, err := findAPI(cl.Company(), "mcp", req.Server)
	if err != nil {
		return notSentResult(err)
	}
	call := apis.ToolCall{Name: req.Tool, Arguments: req.Arguments}.WithApproval(op.OperationID, op.Revision)
	res, err := q.callTool(ctx, cl, api, call)
	if err != nil {
		return errorResult(err)
	}
	note := resultNote{Body: res.StructuredContent, Text: res.Text, Content: res.Content}
	if nop, ok, perr := operations.FromToolResult(res.IsError, res.StructuredContent); ok {
		return newRevisionResult(note, nop, rawToolOperation(res.StructuredContent), perr)
	}
	if !res.IsError {
		return sendResult{answer: operations.AnswerPerformed, note: note}
	}
	if wait, ok := toolInProgress(res.StructuredContent); ok {
		return sendResult{answer: operations.AnswerInProgress, note: note, wait: wait}
	}
	note.Message = "not performed: the tool returned an error to the approved call"
	return sendResult{answer: operations.AnswerRefused, note: note}
}

// newRevisionResult is an answer with an operation: a new revision, or a malformed one, whose
// fault is described in the note as the Company's (it may quote what the Company sent).
func newRevisionResult(note resultNote, op *operations.Operation, raw json.RawMessage, perr error) sendResult {
	if perr != nil {
		note.Detail = perr.Error()
		return sendResult{answer: operations.AnswerMalformed, note: note, why: "a malformed operation"}
	}
	return sendResult{answer: operations.AnswerNewRevision, note: note, op: op, raw: raw}
}

// notSentResult is a send Poppydesk did not make, for a reason of its own: nothing reached the
// Company.
func notSentResult(err error) sendResult {
	own, company := wordsOf(err)
	return sendResult{answer: operations.AnswerTurnedAway, note: resultNote{Detail: company}, why: "Poppydesk could not send it: " + own}
}

// errorResult reads a send that got no answer to read: Poppydesk did not send it, the Company
// refused it at its door, or no usable answer came (a network error, a timeout, a redirect).
func errorResult(err error) sendResult {
	own, company := wordsOf(err)
	note := resultNote{Detail: company}
	var pe *transport.ProtocolError
	switch {
	case errors.Is(err, transport.ErrNotSent):
		return notSentResult(err)
	case errors.As(err, &pe):
		note.HTTPStatus, note.Text = pe.Status, pe.Description
		if pe.Refused() && pe.Status != http.StatusTooManyRequests {
			return sendResult{answer: operations.AnswerTurnedAway, note: note, why: own + ", refusing it at its door before handling it"}
		}
	case errors.Is(err, context.DeadlineExceeded):
		own = "Poppydesk's time limit passed: " + own
	}
	return sendResult{answer: operations.AnswerNone, note: note, why: own}
}

// wordsOf splits an error into Poppydesk's words (own), which never quote the Company, and the
// error's whole text when a part of it is the Company's (company: an OAuth error's words, a
// protocol error's description, an MCP server's error, a redirect's target, a discovery
// document's contents), "" otherwise.
func wordsOf(err error) (own, company string) {
	var oe *oauth.Error
	var pe *transport.ProtocolError
	var je *jsonrpc.Error
	var re *transport.RedirectError
	var ce *discovery.CheckError
	switch {
	case errors.As(err, &pe):
		return fmt.Sprintf("the Company answered HTTP %d", pe.Status), err.Error()
	case errors.As(err, &oe):
		return "the Company's authorization server refused a step (" + oe.Step + ")", err.Error()
	case errors.As(err, &je):
		return "the Company's MCP server answered with an error", err.Error()
	case errors.As(err, &re):
		return "the Company answered with a redirect, which Poppydesk does not follow (spec 3)", err.Error()
	case errors.As(err, &ce) && ce.Detail != "":
		return strings.ReplaceAll(err.Error(), ": "+ce.Detail, ""), err.Error()
	}
	return redact.String(err.Error()), ""
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

package fronts

import (
	"context"
	"fmt"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/app"
)

// ExampleAgentRun is the example agent's transcript: its own words, one line per step
// (discover, describe, call, waiting for your decision, outcome), never Poppydesk's decisions.
type ExampleAgentRun struct {
	Running bool     `json:"running"`
	Lines   []string `json:"lines"`
	// Error is why the run stopped early ("" when it finished).
	Error string `json:"error"`
}

// approvalsTimeout bounds one call from the window: an approval may be sent again while the
// Company reports it in progress (Operations 7).
const approvalsTimeout = 3 * time.Minute

// Approvals is the window's service for approvals (Operations extension v2, sections 5 to 7;
// docs/DESIGN.md invariants 1 and 2), over the Host's approval queue. It is bound to the window and
// only to the window: Approve and Decline are the user's decisions, taken with the window's own
// buttons; the model's side of the queue (CallAPI, CallTool, Wait) is not reachable from here.
// It converts the queue's items into JSON-friendly values and holds no protocol logic.
type Approvals struct{ h *app.Host }

// ApprovalsStatus says whether approvals work, and whether the demo buttons apply.
type ApprovalsStatus struct {
	Available   bool   `json:"available"`
	Problem     string `json:"problem"`
	Demo        bool   `json:"demo"`
	DemoCompany string `json:"demoCompany"`
}

// TermRow is one term: its JSON Pointer (RFC 6901) and its value as JSON text.
type TermRow struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// ApprovalRevision is one revision of an operation as the dialog shows it.
type ApprovalRevision struct {
	OperationID string             `json:"operationId"`
	Revision    string             `json:"revision"`
	Summary     operations.Summary `json:"summary"`
	SummaryText string             `json:"summaryText"`
	Terms       []TermRow          `json:"terms"`
	ExpiresAt   string             `json:"expiresAt"`
	// Digest binds an approval to exactly this revision and the request stored with it (the
	// queue hashes operations.Digest together with that request); Approve presents it.
	Digest string `json:"digest"`
}

// ApprovalRequest is what the model asked for, as text.
type ApprovalRequest struct {
	Method    string `json:"method"`
	URL       string `json:"url"`
	Body      string `json:"body"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	// Requester is the agent that asked, in its own words ("Claude Code 2.1 via poppydesk
	// mcp"); "" when unknown (an operation a Company sent in a conversation).
	Requester string `json:"requester"`
	// Conversation is the conversation the current revision came in ("" for an API or MCP call).
	Conversation string `json:"conversation"`
}

// Outcome is the result of a decision: Poppydesk's status and the Company's own words, verbatim.
type Outcome struct {
	Status     string `json:"status"`
	ApprovalID string `json:"approvalId"`
	HTTPStatus int    `json:"httpStatus"`
	Body       string `json:"body"`
	Text       string `json:"text"`
	Message    string `json:"message"`
}

// ApprovalItem is one approval as the window shows it.
type ApprovalItem struct {
	ID            string `json:"id"`
	Company       string `json:"company"`
	CompanyName   string `json:"companyName"`   // verified by discovery, never from the operation
	CompanyDomain string `json:"companyDomain"` // verified by discovery
	Account       string `json:"account"`       // "" when signed out
	SID           string `json:"sid"`
	Interface     string `json:"interface"`
	State         string `json:"state"`
	// Decidable is true while the user can approve or decline (pending and not expired).
	Decidable bool `json:"decidable"`
	// Violation says, in Poppydesk's words, which rule of the Operations extension the Company
	// broke for this approval (for example other terms under a revision it had already used,
	// Operations 3): it can't be approved and nothing more is sent. "" when none.
	Violation string               `json:"violation"`
	Current   ApprovalRevision     `json:"current"`
	Previous  *ApprovalRevision    `json:"previous"`
	Changes   *operations.Changes  `json:"changes"`
	Warnings  []operations.Warning `json:"warnings"`
	Request   ApprovalRequest      `json:"request"`
	Result    *Outcome             `json:"result"`
	Created   string               `json:"created"`
	Updated   string               `json:"updated"`
	// Decided is when the user approved or declined ("" while undecided, or when the item
	// ended without a decision).
	Decided string `json:"decided"`
}

func (a *Approvals) call() (context.Context, context.CancelFunc, error) {
	if err := a.h.Refusal(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(windowCause(a.h.Context()), approvalsTimeout)
	return ctx, cancel, nil
}

// Status says whether approvals are available, and why not.
func (a *Approvals) Status() ApprovalsStatus {
	if err := a.h.Refusal(); err != nil {
		return ApprovalsStatus{Problem: err.Error()}
	}
	st := ApprovalsStatus{Available: true}
	if d, ok := a.h.Demo(); ok {
		st.Demo, st.DemoCompany = true, d.Name
	}
	return st
}

// ApprovalRow is one approval as the window's list shows it: who asks, for what (the
// Company's summary, raw), its state and when. Opening a row reads the whole item with Get.
type ApprovalRow struct {
	ID            string `json:"id"`
	Company       string `json:"company"`
	CompanyName   string `json:"companyName"`   // verified by discovery, never from the operation
	CompanyDomain string `json:"companyDomain"` // verified by discovery
	Account       string `json:"account"`
	Interface     string `json:"interface"`
	State         string `json:"state"`
	// Decidable is true while the user can approve or decline (pending and not expired).
	Decidable bool `json:"decidable"`
	// Violation is as in ApprovalItem.
	Violation   string `json:"violation"`
	SummaryText string `json:"summaryText"`
	ExpiresAt   string `json:"expiresAt"`
	Created     string `json:"created"`
	Updated     string `json:"updated"`
	Decided     string `json:"decided"`
}

// List returns every approval still open (waiting for the user, approved and being sent, or
// with an unknown outcome), pending first, newest first; Earlier pages through the decided
// ones. Without a queue it is empty (the window shows Status().Problem).
func (a *Approvals) List() ([]ApprovalRow, error) {
	ctx, cancel, err := a.call()
	if err != nil {
		return []ApprovalRow{}, nil
	}
	defer cancel()
	rows, err := a.h.Approvals(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the approvals failed: %w", err)
	}
	return approvalRowsOf(rows, a.h.Now()), nil
}

// ApprovalPage is a page of decided approvals, newest first; Next continues it ("" on the last
// page).
type ApprovalPage struct {
	Items []ApprovalRow `json:"items"`
	Next  string        `json:"next"`
}

// Earlier returns a page of the decided approvals (succeeded, failed, declined, expired,
// superseded), newest first, from cursor ("" for the newest; Next of the previous page), at most
// limit of them (1 to app.ApprovalsPageMax). Long histories are read a page at a time
// ([app.Host.EarlierApprovals]).
func (a *Approvals) Earlier(cursor string, limit int) (ApprovalPage, error) {
	ctx, cancel, err := a.call()
	if err != nil {
		return ApprovalPage{Items: []ApprovalRow{}}, nil
	}
	defer cancel()
	rows, next, err := a.h.EarlierApprovals(ctx, cursor, limit)
	if err != nil {
		return ApprovalPage{}, fmt.Errorf("reading the approvals failed: %w", err)
	}
	return ApprovalPage{Items: approvalRowsOf(rows, a.h.Now()), Next: next}, nil
}

// approvalRowsOf converts the queue's rows for the window as of now, Company text with
// invisible characters made visible.
func approvalRowsOf(rows []approvals.Row, now time.Time) []ApprovalRow {
	out := make([]ApprovalRow, 0, len(rows))
	for i := range rows {
		r := &rows[i]
		out = append(out, ApprovalRow{ID: r.ID, Company: r.Company, CompanyName: visible(r.CompanyName), CompanyDomain: visible(r.CompanyDomain),
			Account: r.Account, Interface: r.Interface, State: r.State, Decidable: app.Decidable(r.State, r.ExpiresAt, now), Violation: r.Violation,
			SummaryText: visible(r.SummaryText), ExpiresAt: timeText(r.ExpiresAt), Created: timeText(r.Created), Updated: timeText(r.Updated),
			Decided: timeText(r.Decided)})
	}
	return out
}

// Get returns one approval.
func (a *Approvals) Get(id string) (ApprovalItem, error) {
	ctx, cancel, err := a.call()
	if err != nil {
		return ApprovalItem{}, err
	}
	defer cancel()
	it, err := a.h.Queue().Get(ctx, id)
	if err != nil {
		return ApprovalItem{}, err
	}
	return approvalItemOf(it, a.h.Now()), nil
}

// Approve approves the revision the user saw, named by its revision and digest (from the item
// the dialog displayed). The queue refuses anything but the latest, unexpired revision with
// that digest (docs/DESIGN.md invariant 2), persists the approval, sends it and returns the outcome.
func (a *Approvals) Approve(id, revision, digest string) (Outcome, error) {
	ctx, cancel, err := a.call()
	if err != nil {
		return Outcome{}, err
	}
	defer cancel()
	a.h.Logger().Info("the user approved in the window", "approval", id, "revision", revision)
	out, err := a.h.Queue().Approve(ctx, id, revision, digest)
	if err != nil {
		return Outcome{}, err
	}
	return convertOutcome(out), nil
}

// Decline declines the revision the user saw. Nothing is sent to the Company.
func (a *Approvals) Decline(id, revision string) error {
	ctx, cancel, err := a.call()
	if err != nil {
		return err
	}
	defer cancel()
	a.h.Logger().Info("the user declined in the window", "approval", id, "revision", revision)
	return a.h.Queue().Decline(ctx, id, revision)
}

// CheckOutcome sends the same approval again to learn the outcome of an item whose outcome is
// unknown (Operations 7: the Company answers a repeated approval with the first result).
func (a *Approvals) CheckOutcome(id string) (Outcome, error) {
	ctx, cancel, err := a.call()
	if err != nil {
		return Outcome{}, err
	}
	defer cancel()
	out, err := a.h.Queue().CheckOutcome(ctx, id)
	if err != nil {
		return Outcome{}, err
	}
	return convertOutcome(out), nil
}

// DialogStep is one step of the way from an approval's event to its dialog on screen, in
// milliseconds since the window received the event (the window's own clock).
type DialogStep struct {
	Name string  `json:"name"`
	MS   float64 `json:"ms"`
}

// DialogShown is the window's report that the dialog of approval id has been painted, with the
// steps it took since the event arrived. It only writes a log line, "approval dialog shown", with
// the time since the Host sent the event (the desktop smoke test reads it); it decides nothing.
func (a *Approvals) DialogShown(id string, steps []DialogStep) {
	if a.h == nil {
		return
	}
	attrs := []any{"approval", id}
	if d, ok := a.h.SinceApprovalSent(id); ok {
		attrs = append(attrs, "since_event_ms", float64(d.Microseconds())/1000)
	}
	for i, s := range steps {
		if i >= 8 {
			break
		}
		attrs = append(attrs, "window_"+stepName(s.Name)+"_ms", s.MS)
	}
	a.h.Logger().Info("approval dialog shown", attrs...)
}

// stepName keeps a step's name to a short run of lower-case letters and underscores (it
// becomes a log attribute).
func stepName(s string) string {
	b := make([]byte, 0, 16)
	for i := 0; i < len(s) && len(b) < 16; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
			b = append(b, c)
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		}
	}
	if len(b) == 0 {
		return "step"
	}
	return string(b)
}

// StartDemoExchange, in demo mode only, asks the reference Company for the jacket exchange
// through its API ("api") or its MCP server ("mcp"), as the model would. It is a request, not a
// decision: the Company answers that it needs the user's approval and the dialog opens.
func (a *Approvals) StartDemoExchange(kind string) (string, error) {
	if _, demo := a.h.Demo(); !demo {
		return a.h.DemoRequest(context.Background(), kind) // refused outside the demo
	}
	ctx, cancel, err := a.call()
	if err != nil {
		return "", err
	}
	defer cancel()
	return a.h.DemoRequest(ctx, kind)
}

// ResetDemo, in demo mode only, restores the reference Company as at start and signs the demo
// account in again (Host.ResetDemo): the window's "Reset demo" button.
func (a *Approvals) ResetDemo() error {
	if _, demo := a.h.Demo(); !demo {
		return a.h.ResetDemo(context.Background()) // refused outside the demo
	}
	ctx, cancel, err := a.call()
	if err != nil {
		return err
	}
	defer cancel()
	return a.h.ResetDemo(ctx)
}

// RunExampleAgent, in demo mode only, starts the scripted example agent (a user gesture: the
// window's "Run the example agent" button). The agent talks to Poppydesk only through the model
// interface, as any MCP client would: it discovers the reference Company, asks for the jacket
// exchange, is told that it waits for the user, and waits; the approval dialog opens, and only the
// user's Approve in the window performs it. It returns at once; the agent's lines arrive as
// [app.EventExampleAgent] and through [Approvals.ExampleAgent]. One run at a time.
func (a *Approvals) RunExampleAgent() error { return a.h.RunExampleAgent() }

// ExampleAgent returns the example agent's transcript (the last run).
func (a *Approvals) ExampleAgent() ExampleAgentRun { return exampleAgentRunOf(a.h.ExampleAgent()) }

// exampleAgentRunOf converts the example agent's run: its lines and the reason it stopped are
// shown with invisible characters made visible.
func exampleAgentRunOf(r app.AgentRun) ExampleAgentRun {
	out := ExampleAgentRun{Running: r.Running, Lines: make([]string, 0, len(r.Lines))}
	for _, l := range r.Lines {
		out.Lines = append(out.Lines, visible(l))
	}
	if r.Err != nil {
		out.Error = "The example agent stopped: " + visible(r.Err.Error())
	}
	return out
}

// approvalItemOf converts a queue item for the window as of now: Company text with invisible
// characters made visible, JSON indented, times in RFC 3339.
func approvalItemOf(it *approvals.Item, now time.Time) ApprovalItem {
	out := ApprovalItem{
		ID:            it.ID,
		Company:       it.Company,
		CompanyName:   visible(it.CompanyName),
		CompanyDomain: visible(it.CompanyDomain),
		Account:       it.Account,
		SID:           it.SID,
		Interface:     it.Interface,
		State:         it.State,
		Decidable:     app.Decidable(it.State, it.Current.ExpiresAt, now),
		Violation:     it.Violation,
		Current:       convertRevision(&it.Current),
		Changes:       it.Changes,
		Warnings:      it.Warnings,
		Request: ApprovalRequest{
			Method:       it.Request.Method,
			URL:          visible(it.Request.URL),
			Body:         jsonText(it.Request.Body),
			Tool:         visible(it.Request.Tool),
			Arguments:    jsonText(it.Request.Arguments),
			Requester:    visible(it.Request.Requester),
			Conversation: visible(it.Request.Conversation),
		},
		Created: timeText(it.Created),
		Updated: timeText(it.Updated),
		Decided: timeText(it.Decided),
	}
	if out.Warnings == nil {
		out.Warnings = []operations.Warning{}
	}
	if it.Previous != nil {
		p := convertRevision(it.Previous)
		out.Previous = &p
	}
	if it.Result != nil {
		o := convertOutcome(it.Result)
		out.Result = &o
	}
	return out
}

func convertRevision(v *approvals.OperationView) ApprovalRevision {
	return ApprovalRevision{
		OperationID: v.OperationID,
		Revision:    v.Revision,
		Summary:     v.Summary,
		SummaryText: visible(v.SummaryText),
		Terms:       termRowsOf(operations.TermRows(v.Terms)),
		ExpiresAt:   timeText(v.ExpiresAt),
		Digest:      v.Digest,
	}
}

func convertOutcome(o *approvals.Outcome) Outcome {
	if o == nil {
		return Outcome{}
	}
	return Outcome{Status: o.Status, ApprovalID: o.ApprovalID, HTTPStatus: o.HTTPStatus, Body: visible(jsonText(o.Body)),
		Text: visible(o.Text), Message: o.Message}
}

// termRowsOf converts the terms' rows (operations.TermRows: JSON Pointer → value as JSON text,
// in the Company's order, invisible characters made visible) for the dialog.
func termRowsOf(rows []operations.TermRow) []TermRow {
	out := make([]TermRow, len(rows))
	for i, r := range rows {
		out[i] = TermRow{Path: r.Path, Value: r.Value}
	}
	return out
}

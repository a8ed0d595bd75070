package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/operations"
)

// EventExampleAgent tells the window that the example agent said something or finished; its
// data is an [ExampleAgentRun]. The window shows the lines as the agent's words.
const EventExampleAgent = "approvals:example-agent"

// DemoKindAgent is the ApprovalsConfig.Demo kind that runs the scripted example agent
// (modelapi.ExampleAgent) against the window's own model socket; the agent's lines are passed to
// the function [AgentOutput] returns for the Demo call's context.
const DemoKindAgent = "agent"

// maxAgentLines bounds the example agent's transcript.
const maxAgentLines = 200

type agentOutputKey struct{}

// AgentOutput returns where the Demo function of kind [DemoKindAgent] writes the agent's
// progress lines (a no-op for a context without one).
func AgentOutput(ctx context.Context) func(line string) {
	if f, ok := ctx.Value(agentOutputKey{}).(func(string)); ok {
		return f
	}
	return func(string) {}
}

// WithAgentOutput returns ctx carrying say as the example agent's output (see [AgentOutput]).
func WithAgentOutput(ctx context.Context, say func(line string)) context.Context {
	return context.WithValue(ctx, agentOutputKey{}, say)
}

// ExampleAgentRun is the example agent's transcript: its own words, one line per step
// (discover, describe, call, waiting for your decision, outcome), never Poppydesk's decisions.
type ExampleAgentRun struct {
	Running bool     `json:"running"`
	Lines   []string `json:"lines"`
	// Error is why the run stopped early ("" when it finished).
	Error string `json:"error"`
}

// EventApprovalsChanged tells the window that an approval was created or changed; its data is
// an [ApprovalChange]. The window reads the list again and opens the dialog for a new item.
const EventApprovalsChanged = "approvals:changed"

// ApprovalQueue is what [Approvals] needs from the approval queue (agentcore/approvals.Queue):
// the window's side only. The model's side (CallAPI, CallTool, Wait) is not reachable from here.
type ApprovalQueue interface {
	List(ctx context.Context) ([]approvals.Item, error)
	Get(ctx context.Context, id string) (*approvals.Item, error)
	Approve(ctx context.Context, id, revision, digest string) (*approvals.Outcome, error)
	Decline(ctx context.Context, id, revision string) error
	CheckOutcome(ctx context.Context, id string) (*approvals.Outcome, error)
}

// ApprovalsConfig configures [Approvals].
type ApprovalsConfig struct {
	// Queue is the approval queue; nil when it could not be opened (Problem says why).
	Queue ApprovalQueue
	// Problem explains, in words the user can act on, why approvals are unavailable.
	Problem string
	// Demo asks the reference Company for the jacket exchange ("api" or "mcp") in demo mode,
	// standing in for the model; nil outside demo mode.
	Demo func(ctx context.Context, kind string) (string, error)
	// DemoCompany names the reference Company in demo mode.
	DemoCompany string
	// Context is the application's root context (Lifecycle.Context); calls from the window run
	// under it, so shutdown cancels them. Nil: context.Background.
	Context context.Context
	// Emitter receives EventApprovalsChanged and EventSections; nil drops them.
	Emitter Emitter
	// Notifier shows a desktop notification when an approval arrives; nil shows none.
	Notifier Notifier
	// Log receives failures; nil discards.
	Log *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// CallTimeout bounds one call from the window (default 3 minutes: an approval may be sent
	// again while the Company reports it in progress, Operations 7).
	CallTimeout time.Duration
}

// Approvals is the window's service for approvals (Operations extension v2, sections 5 to 7;
// DESIGN.md invariants 1 and 2). It is bound to the window and only to the window: Approve and
// Decline are the user's decisions, taken with the window's own buttons. It converts the
// queue's items into JSON-friendly values and holds no protocol logic.
type Approvals struct {
	cfg     ApprovalsConfig
	pending atomic.Int64

	agentMu  sync.Mutex
	agentRun ExampleAgentRun
}

// NewApprovals returns the service. Call [ApprovalChanges] to get the queue's OnChange handler.
func NewApprovals(cfg ApprovalsConfig) *Approvals {
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 3 * time.Minute
	}
	if cfg.Queue == nil && cfg.Problem == "" {
		cfg.Problem = "Approvals are unavailable because the approval queue is not running."
	}
	return &Approvals{cfg: cfg}
}

// ApprovalChange is the data of EventApprovalsChanged.
type ApprovalChange struct {
	Kind  string `json:"kind"` // "created", "revision" or "state"
	ID    string `json:"id"`
	State string `json:"state"`
}

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
}

func (a *Approvals) call() (context.Context, context.CancelFunc, error) {
	if a.cfg.Queue == nil {
		return nil, nil, errors.New(a.cfg.Problem)
	}
	ctx, cancel := context.WithTimeout(a.cfg.Context, a.cfg.CallTimeout)
	return ctx, cancel, nil
}

// Status says whether approvals are available, and why not.
func (a *Approvals) Status() ApprovalsStatus {
	return ApprovalsStatus{Available: a.cfg.Queue != nil, Problem: a.cfg.Problem, Demo: a.cfg.Demo != nil, DemoCompany: a.cfg.DemoCompany}
}

// List returns every approval, pending first, newest first. Without a queue it is empty (the
// window shows Status().Problem).
func (a *Approvals) List() ([]ApprovalItem, error) {
	if a.cfg.Queue == nil {
		return []ApprovalItem{}, nil
	}
	ctx, cancel, _ := a.call()
	defer cancel()
	items, err := a.cfg.Queue.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the approvals failed: %w", err)
	}
	out := make([]ApprovalItem, 0, len(items))
	n := 0
	for i := range items {
		it := a.convert(&items[i])
		if it.Decidable {
			n++
		}
		out = append(out, it)
	}
	a.pending.Store(int64(n))
	return out, nil
}

// Get returns one approval.
func (a *Approvals) Get(id string) (ApprovalItem, error) {
	ctx, cancel, err := a.call()
	if err != nil {
		return ApprovalItem{}, err
	}
	defer cancel()
	it, err := a.cfg.Queue.Get(ctx, id)
	if err != nil {
		return ApprovalItem{}, err
	}
	return a.convert(it), nil
}

// Approve approves the revision the user saw, named by its revision and digest (from the item
// the dialog displayed). The queue refuses anything but the latest, unexpired revision with
// that digest (DESIGN.md invariant 2), persists the approval, sends it and returns the outcome.
func (a *Approvals) Approve(id, revision, digest string) (Outcome, error) {
	ctx, cancel, err := a.call()
	if err != nil {
		return Outcome{}, err
	}
	defer cancel()
	a.cfg.Log.Info("the user approved in the window", "approval", id, "revision", revision)
	out, err := a.cfg.Queue.Approve(ctx, id, revision, digest)
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
	a.cfg.Log.Info("the user declined in the window", "approval", id, "revision", revision)
	return a.cfg.Queue.Decline(ctx, id, revision)
}

// CheckOutcome sends the same approval again to learn the outcome of an item whose outcome is
// unknown (Operations 7: the Company answers a repeated approval with the first result).
func (a *Approvals) CheckOutcome(id string) (Outcome, error) {
	ctx, cancel, err := a.call()
	if err != nil {
		return Outcome{}, err
	}
	defer cancel()
	out, err := a.cfg.Queue.CheckOutcome(ctx, id)
	if err != nil {
		return Outcome{}, err
	}
	return convertOutcome(out), nil
}

// StartDemoExchange, in demo mode only, asks the reference Company for the jacket exchange
// through its API ("api") or its MCP server ("mcp"), as the model would. It is a request, not a
// decision: the Company answers that it needs the user's approval and the dialog opens.
func (a *Approvals) StartDemoExchange(kind string) (string, error) {
	if a.cfg.Demo == nil {
		return "", errors.New("the demo exchange exists only in demo mode (`poppydesk demo`)")
	}
	if kind != "api" && kind != "mcp" {
		return "", fmt.Errorf("unknown demo kind %q: use \"api\" or \"mcp\" (the example agent runs with RunExampleAgent)", kind)
	}
	ctx, cancel := context.WithTimeout(a.cfg.Context, a.cfg.CallTimeout)
	defer cancel()
	return a.cfg.Demo(ctx, kind)
}

// RunExampleAgent, in demo mode only, starts the scripted example agent (a user gesture: the
// window's "Run the example agent" button). The agent talks to Poppydesk only through the model
// interface, as any MCP client would: it discovers the reference Company, asks for the jacket
// exchange, is told that it waits for the user, and waits; the approval dialog opens, and only the
// user's Approve in the window performs it. It returns at once; the agent's lines arrive as
// [EventExampleAgent] and through [Approvals.ExampleAgent]. One run at a time.
func (a *Approvals) RunExampleAgent() error {
	if a.cfg.Demo == nil {
		return errors.New("the example agent runs from the window only in demo mode (`poppydesk demo`); otherwise run `poppydesk example-agent --company DOMAIN`")
	}
	a.agentMu.Lock()
	if a.agentRun.Running {
		a.agentMu.Unlock()
		return errors.New("the example agent is already running; decide its approval, or wait for its report")
	}
	a.agentRun = ExampleAgentRun{Running: true, Lines: []string{}}
	a.agentMu.Unlock()
	a.emitAgent()
	go func() {
		// The agent waits for the user's decision (at most 5 minutes in modelapi.ExampleAgent).
		ctx, cancel := context.WithTimeout(a.cfg.Context, 10*time.Minute)
		defer cancel()
		_, err := a.cfg.Demo(WithAgentOutput(ctx, a.agentSay), DemoKindAgent)
		a.agentMu.Lock()
		a.agentRun.Running = false
		if err != nil {
			a.agentRun.Error = "The example agent stopped: " + visible(err.Error())
			a.cfg.Log.Info("the example agent stopped", "err", err)
		}
		a.agentMu.Unlock()
		a.emitAgent()
	}()
	return nil
}

// ExampleAgent returns the example agent's transcript (the last run).
func (a *Approvals) ExampleAgent() ExampleAgentRun {
	a.agentMu.Lock()
	defer a.agentMu.Unlock()
	r := a.agentRun
	r.Lines = append([]string{}, r.Lines...)
	return r
}

func (a *Approvals) agentSay(line string) {
	line = visible(strings.TrimRight(line, "\n"))
	if strings.TrimSpace(line) == "" {
		return
	}
	a.agentMu.Lock()
	a.agentRun.Lines = append(a.agentRun.Lines, line)
	if n := len(a.agentRun.Lines); n > maxAgentLines {
		a.agentRun.Lines = a.agentRun.Lines[n-maxAgentLines:]
	}
	a.agentMu.Unlock()
	a.emitAgent()
}

func (a *Approvals) emitAgent() { a.emit(EventExampleAgent, a.ExampleAgent()) }

// ApprovalChanges returns the handler for the queue's OnChange: it tells the window (event and
// badge) and, for a new approval or revision, shows a desktop notification. It is a function,
// not a method, so the window cannot call it. It never blocks for long: the list is read again
// in a goroutine.
func ApprovalChanges(a *Approvals) func(approvals.Event) {
	return func(ev approvals.Event) {
		a.emit(EventApprovalsChanged, ApprovalChange{Kind: ev.Kind, ID: ev.ApprovalID, State: ev.State})
		go a.afterChange(ev)
	}
}

// ApprovalsCounter returns the Shell's section counter for the Approvals badge: the number of
// approvals waiting for a decision, as of the last change.
func ApprovalsCounter(a *Approvals) Counter {
	return func(id string) int {
		if id != SectionApprovals {
			return 0
		}
		return int(a.pending.Load())
	}
}

// RefreshCount reads the queue to update the badge count (at start, after Recover).
func RefreshCount(a *Approvals) {
	if a.cfg.Queue == nil {
		return
	}
	if _, err := a.List(); err != nil {
		a.cfg.Log.Warn("counting the pending approvals failed", "err", err)
	}
	a.emit(EventSections)
}

func (a *Approvals) afterChange(ev approvals.Event) {
	RefreshCount(a)
	if ev.Kind != "created" && ev.Kind != "revision" || a.cfg.Notifier == nil || a.cfg.Queue == nil {
		return
	}
	ctx, cancel := context.WithTimeout(a.cfg.Context, 5*time.Second)
	defer cancel()
	it, err := a.cfg.Queue.Get(ctx, ev.ApprovalID)
	if err != nil {
		a.cfg.Log.Debug("no notification: reading the approval failed", "approval", ev.ApprovalID, "err", err)
		return
	}
	name := visible(it.CompanyName)
	title := "Approval needed: " + name
	body := name + " needs your approval before it acts. Open Poppydesk to read the terms and decide."
	if ev.Kind == "revision" {
		title = "New terms from " + name
		body = name + " changed the terms of an approval you have not decided yet. Open Poppydesk to read them."
	}
	a.cfg.Notifier.Notify(title, body)
}

func (a *Approvals) emit(name string, data ...any) {
	if a.cfg.Emitter != nil {
		a.cfg.Emitter.Emit(name, data...)
	}
}

func (a *Approvals) convert(it *approvals.Item) ApprovalItem {
	now := a.cfg.Now()
	out := ApprovalItem{
		ID:            it.ID,
		Company:       it.Company,
		CompanyName:   visible(it.CompanyName),
		CompanyDomain: visible(it.CompanyDomain),
		Account:       it.Account,
		SID:           it.SID,
		Interface:     it.Interface,
		State:         it.State,
		Decidable:     it.State == string(operations.StatePending) && now.Before(it.Current.ExpiresAt) && it.Violation == "",
		Violation:     it.Violation,
		Current:       convertRevision(&it.Current),
		Changes:       it.Changes,
		Warnings:      it.Warnings,
		Request: ApprovalRequest{
			Method:    it.Request.Method,
			URL:       visible(it.Request.URL),
			Body:      jsonText(it.Request.Body),
			Tool:      visible(it.Request.Tool),
			Arguments: jsonText(it.Request.Arguments),
		},
		Created: timeText(it.Created),
		Updated: timeText(it.Updated),
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

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// jsonText shows JSON data indented, with invisible characters made visible; anything that is
// not JSON is shown as it is.
func jsonText(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return visible(string(raw))
	}
	return visible(b.String())
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

// visible is operations.Visible with a fast path for printable ASCII, which has no invisible
// or direction-changing character (most terms, URLs and IDs).
func visible(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return operations.Visible(s)
		}
	}
	return s
}

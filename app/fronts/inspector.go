package fronts

// The Inspector's service: every exchange the engine made, with its cause, Session, decoded
// JWTs (agentcore/inspect, taken before redaction) and findings; the findings list; exports as
// HAR 1.2 and curl; and, in the demo, the reference Company's faults. The Host keeps the log and
// the findings (app/host_inspector.go) and announces a change as [app.EventInspector].

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
)

// Inspector is the window's service for the Inspector screen.
type Inspector struct{ h *app.Host }

// InspectorQuery filters the timeline; zero fields do not filter.
type InspectorQuery struct {
	Company      string `json:"company"`
	SID          string `json:"sid"`
	ErrorsOnly   bool   `json:"errors_only"`
	FindingsOnly bool   `json:"findings_only"`
	// Search matches the method, URL, status, cause and findings, ignoring case.
	Search string `json:"search"`
	// Limit is how many of the newest matches to return (default 200).
	Limit int `json:"limit"`
}

// InspectorRow is one exchange on the timeline.
type InspectorRow struct {
	ID         int64   `json:"id"`
	At         string  `json:"at"` // RFC 3339, UTC
	Company    string  `json:"company"`
	Method     string  `json:"method"`
	URL        string  `json:"url"`
	Status     int     `json:"status"`
	DurationMS float64 `json:"duration_ms"`
	Cause      string  `json:"cause"`
	CauseKind  string  `json:"cause_kind"`
	SID        string  `json:"sid"`
	Findings   int     `json:"findings"`
	MustFail   bool    `json:"must_fail"`
	Error      bool    `json:"error"`
	// ResendOf is the exchange this one sends again, edited in the Inspector (0 for none).
	ResendOf int64 `json:"resend_of"`
}

// InspectorPage is the timeline with what its filters can choose from.
type InspectorPage struct {
	Rows  []InspectorRow `json:"rows"`
	Total int            `json:"total"` // matches before Limit
	// Searched is how many of the log's newest exchanges were searched; Capped says the log
	// holds more, older ones, which are not listed.
	Searched  int      `json:"searched"`
	Capped    bool     `json:"capped"`
	Companies []string `json:"companies"`
	Sessions  []string `json:"sessions"`
	// Resend says the Inspector offers edit-and-resend (developer mode is on).
	Resend bool `json:"resend"`
}

// InspectorHeader is one header line.
type InspectorHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// InspectorToken is a decoded JWT, as JSON text for the window to show.
type InspectorToken struct {
	Where  string `json:"where"`
	Header string `json:"header"`
	Claims string `json:"claims"`
	Note   string `json:"note"`
}

// InspectorEntry is one exchange opened: headers and bodies (secrets masked), decoded tokens,
// findings and the curl command.
type InspectorEntry struct {
	Row             InspectorRow      `json:"row"`
	RequestHeaders  []InspectorHeader `json:"request_headers"`
	RequestBody     string            `json:"request_body"`
	ResponseHeaders []InspectorHeader `json:"response_headers"`
	ResponseBody    string            `json:"response_body"`
	Tokens          []InspectorToken  `json:"tokens"`
	Findings        []inspect.Finding `json:"findings"`
	Curl            string            `json:"curl"`
}

// InspectorFault is one of the demo's reference Company faults.
type InspectorFault struct {
	Name  string `json:"name"`
	On    bool   `json:"on"`
	Group string `json:"group"` // "company" or "agent" (the Company Agent)
}

func (i *Inspector) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(i.h.Context(), 30*time.Second)
}

func rowOf(ex store.Exchange, d *inspect.Details) InspectorRow {
	r := InspectorRow{ID: ex.ID, At: ex.At.UTC().Format(time.RFC3339Nano), Company: ex.Company, Method: ex.Method, URL: ex.URL,
		Status: ex.Status, DurationMS: float64(ex.Duration.Microseconds()) / 1000, SID: d.SID, Findings: len(d.Findings),
		Error: ex.Status == 0 || ex.Status >= 400}
	if d.Cause != nil {
		r.Cause, r.CauseKind, r.ResendOf = d.Cause.String(), d.Cause.Kind, d.Cause.Resends
	}
	for _, f := range d.Findings {
		r.MustFail = r.MustFail || f.Level == inspect.MUST
	}
	return r
}

func (q InspectorQuery) match(r InspectorRow, d *inspect.Details) bool {
	switch {
	case q.Company != "" && r.Company != q.Company,
		q.SID != "" && r.SID != q.SID,
		q.ErrorsOnly && !r.Error,
		q.FindingsOnly && r.Findings == 0:
		return false
	}
	if s := strings.ToLower(strings.TrimSpace(q.Search)); s != "" {
		hay := strings.ToLower(fmt.Sprintf("%s %s %d %s %s", r.Method, r.URL, r.Status, r.Cause, r.Company))
		for _, f := range d.Findings {
			hay += " " + strings.ToLower(f.String())
		}
		return strings.Contains(hay, s)
	}
	return true
}

// List returns the newest exchanges matching q, newest first, from the newest app.InspectorMax
// of the log (Total counts the matches among those).
func (i *Inspector) List(q InspectorQuery) (InspectorPage, error) {
	if err := i.h.Refusal(); err != nil {
		return InspectorPage{}, err
	}
	ctx, cancel := i.ctx()
	defer cancel()
	all, capped, err := i.h.Exchanges(ctx)
	if err != nil {
		return InspectorPage{}, err
	}
	if q.Limit <= 0 {
		q.Limit = 200
	}
	page := InspectorPage{Rows: []InspectorRow{}, Companies: []string{}, Sessions: []string{}, Searched: len(all), Capped: capped,
		Resend: i.h.ResendOffered()}
	companies, sessions := map[string]bool{}, map[string]bool{}
	for _, ex := range all {
		d, err := inspect.ParseDetails(ex.Details)
		if err != nil {
			d = &inspect.Details{}
		}
		r := rowOf(ex, d)
		if r.Company != "" {
			companies[r.Company] = true
		}
		if r.SID != "" && (q.Company == "" || r.Company == q.Company) {
			sessions[r.SID] = true
		}
		if !q.match(r, d) {
			continue
		}
		page.Total++
		if len(page.Rows) < q.Limit {
			page.Rows = append(page.Rows, r)
		}
	}
	for c := range companies {
		page.Companies = append(page.Companies, c)
	}
	for s := range sessions {
		page.Sessions = append(page.Sessions, s)
	}
	sort.Strings(page.Companies)
	sort.Strings(page.Sessions)
	return page, nil
}

// Entry opens one exchange.
func (i *Inspector) Entry(id int64) (InspectorEntry, error) {
	if err := i.h.Refusal(); err != nil {
		return InspectorEntry{}, err
	}
	ctx, cancel := i.ctx()
	defer cancel()
	exs, err := i.h.ExchangesByID(ctx, []int64{id})
	if err != nil {
		return InspectorEntry{}, err
	}
	ex := exs[0]
	d, err := inspect.ParseDetails(ex.Details)
	if err != nil {
		d = &inspect.Details{}
	}
	e := InspectorEntry{Row: rowOf(ex, d), RequestHeaders: headersOf(ex.RequestHeaders), RequestBody: string(ex.RequestBody),
		ResponseHeaders: headersOf(ex.ResponseHeaders), ResponseBody: string(ex.ResponseBody), Tokens: []InspectorToken{},
		Findings: d.Findings, Curl: inspect.CurlFor(ex, i.h.CurlOptions(ex.URL))}
	if e.Findings == nil {
		e.Findings = []inspect.Finding{}
	}
	for _, t := range d.Tokens {
		e.Tokens = append(e.Tokens, InspectorToken{Where: t.Where, Header: indentJSON(t.Header), Claims: indentJSON(t.Claims), Note: t.Note})
	}
	return e, nil
}

func headersOf(h http.Header) []InspectorHeader {
	out := []InspectorHeader{}
	for _, nv := range sortedHeaders(h) {
		out = append(out, nv)
	}
	return out
}

func sortedHeaders(h http.Header) []InspectorHeader {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []InspectorHeader
	for _, k := range keys {
		for _, v := range h[k] {
			out = append(out, InspectorHeader{Name: k, Value: v})
		}
	}
	return out
}

func indentJSON(m map[string]any) string {
	if m == nil {
		return ""
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return ""
	}
	return string(b)
}

// ExportHAR returns the exchanges with these IDs as a HAR 1.2 archive (secrets masked).
func (i *Inspector) ExportHAR(ids []int64) (string, error) {
	if err := i.h.Refusal(); err != nil {
		return "", err
	}
	ctx, cancel := i.ctx()
	defer cancel()
	exs, err := i.h.ExchangesByID(ctx, ids)
	if err != nil {
		return "", err
	}
	b, err := inspect.HAR(exs, i.h.About().Version)
	return string(b), err
}

// ExportCurl returns the exchanges with these IDs as curl commands (secrets masked), each with
// what it needs against a Company under development (Host.CurlOptions: the developer CA).
func (i *Inspector) ExportCurl(ids []int64) (string, error) {
	if err := i.h.Refusal(); err != nil {
		return "", err
	}
	ctx, cancel := i.ctx()
	defer cancel()
	exs, err := i.h.ExchangesByID(ctx, ids)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, ex := range exs {
		parts = append(parts, inspect.CurlFor(ex, i.h.CurlOptions(ex.URL)))
	}
	return strings.Join(parts, "\n\n"), nil
}

// InspectorResend is an exchange as the developer edited it, to send again: the headers
// Poppy-Session, DPoP, Authorization, Poppy-Version and Poppy-Extensions are never taken from
// it (app.ResendRemade): the pipeline makes them anew.
type InspectorResend struct {
	Of      int64             `json:"of"`
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers []InspectorHeader `json:"headers"`
	Body    string            `json:"body"`
}

// InspectorResent is a resend's answer: the new exchange opened (the last one when the
// pipeline sent more than one), with the Company's refusal in words ("" when it accepted).
type InspectorResent struct {
	Entry   InspectorEntry `json:"entry"`
	IDs     []int64        `json:"ids"`
	Refused string         `json:"refused"`
}

// Resend sends an exchange again as edited, re-signed with a fresh Session JWT and the
// account's current token, in developer mode only (app.Host.Resend); the new exchange is on the
// timeline, linked to the original.
func (i *Inspector) Resend(r InspectorResend) (InspectorResent, error) {
	if err := i.h.Refusal(); err != nil {
		return InspectorResent{}, err
	}
	ctx, cancel := i.ctx()
	defer cancel()
	h := http.Header{}
	for _, nv := range r.Headers {
		h.Add(nv.Name, nv.Value)
	}
	res, err := i.h.Resend(ctx, app.Resend{Of: r.Of, Method: r.Method, URL: r.URL, Header: h, Body: []byte(r.Body)})
	if err != nil {
		return InspectorResent{}, err
	}
	out := InspectorResent{IDs: res.IDs, Refused: res.Refused}
	if len(res.IDs) == 0 {
		return out, errors.New("the request was sent, but its exchange is not in the log (the log was falling behind): look for it on the timeline")
	}
	if out.Entry, err = i.Entry(res.IDs[len(res.IDs)-1]); err != nil {
		return out, err
	}
	return out, nil
}

// Findings lists the findings, newest first.
func (i *Inspector) Findings() ([]inspect.Finding, error) {
	if err := i.h.Refusal(); err != nil {
		return nil, err
	}
	l := i.h.Findings().List()
	slices.Reverse(l)
	if l == nil {
		l = []inspect.Finding{}
	}
	return l, nil
}

// Faults lists the demo's reference Company faults (an error outside the demo).
func (i *Inspector) Faults() ([]InspectorFault, error) {
	srv := i.h.DemoCompany()
	if srv == nil {
		return nil, errors.New("the reference Company's faults can be switched only in the demo (poppydesk demo)")
	}
	out := []InspectorFault{}
	for _, f := range refcompany.AllFaults {
		g := "company"
		if slices.Contains(refcompany.AgentFaults, f) {
			g = "agent"
		}
		out = append(out, InspectorFault{Name: f, On: srv.FaultOn(f), Group: g})
	}
	return out, nil
}

// SetFault switches one of the demo's reference Company faults on or off.
func (i *Inspector) SetFault(name string, on bool) ([]InspectorFault, error) {
	if _, err := i.Faults(); err != nil {
		return nil, err
	}
	if err := i.h.SetDemoFault(name, on); err != nil {
		return nil, err
	}
	return i.Faults()
}

// InspectorFlow is one flow of the timeline drawn as a sequence diagram: the exchanges one
// action caused (a sign-in, an approval, a conversation, a browser join, a tool call of the
// model), oldest first, between the participants in Lanes. A Company's fetch of Poppydesk's
// client metadata or keys (developer mode) joins the flow it happened during.
type InspectorFlow struct {
	ID      string          `json:"id"` // its first exchange's ID, kept as the flow grows
	Kind    string          `json:"kind"`
	Title   string          `json:"title"`
	Company string          `json:"company"`
	At      string          `json:"at"` // the first exchange's time, RFC 3339, UTC
	Lanes   []string        `json:"lanes"`
	Arrows  []InspectorStep `json:"arrows"`
}

// InspectorStep is one exchange of a flow: a request from lane From to lane To (indexes into
// Lanes) and its answer back.
type InspectorStep struct {
	Exchange int64  `json:"exchange"`
	From     int    `json:"from"`
	To       int    `json:"to"`
	Label    string `json:"label"` // method and path
	Status   int    `json:"status"`
	Error    bool   `json:"error"`
	At       string `json:"at"`
}

// flowGap is how long a flow waits for its next exchange: one more after a longer pause starts
// a new flow of the same kind.
const flowGap = time.Minute

// Flow kinds.
const (
	FlowSignIn       = "sign-in"
	FlowApproval     = "approval"
	FlowConversation = "conversation"
	FlowBrowser      = "browser join"
)

// flowOf is the kind and name of the flow a cause belongs to ("" for a Company's fetch, which
// joins the flow it happened during).
func flowOf(c *inspect.Cause) (kind, name string) {
	switch {
	case c == nil:
		return "engine", "Poppydesk's own work"
	case c.Kind == inspect.CauseCompany:
		return "", ""
	case c.Kind == inspect.CauseWindow && strings.HasPrefix(c.Name, "SignIn"):
		return FlowSignIn, "Sign-in"
	case c.Kind == inspect.CauseWindow && strings.HasPrefix(c.Name, "Approvals."):
		return FlowApproval, "Approval"
	case c.Kind == inspect.CauseWindow && strings.HasPrefix(c.Name, "Conversations."):
		return FlowConversation, "Conversation"
	case c.Kind == inspect.CauseWindow && strings.HasPrefix(c.Name, "Browser."):
		return FlowBrowser, "Browser join"
	}
	return c.Kind, c.String()
}

// Flows groups the log's newest exchanges (app.InspectorMax) into flows, newest first (at most
// limit, default 50), each with its sequence diagram's lanes and arrows: Poppydesk, then each
// host it sent to (the Company's issuer, APIs, MCP server, Company Agent) in the order first
// reached; a Company's fetch of the client metadata goes from "the Company" to Poppydesk's
// metadata host.
func (i *Inspector) Flows(limit int) ([]InspectorFlow, error) {
	if err := i.h.Refusal(); err != nil {
		return nil, err
	}
	ctx, cancel := i.ctx()
	defer cancel()
	all, _, err := i.h.Exchanges(ctx)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 50
	}
	var flows []*building
	asked := map[string]askedFor{}
	open := map[string]*building{}
	var recent *building // the flow of the latest exchange, which a Company's fetch joins
	for _, ex := range slices.Backward(all) {
		d, err := inspect.ParseDetails(ex.Details)
		if err != nil {
			d = &inspect.Details{}
		}
		kind, name := flowOf(d.Cause)
		var b *building
		if kind == "" {
			if recent != nil && ex.At.Sub(recent.last) <= flowGap {
				b = recent
			} else {
				kind, name = inspect.CauseCompany, "The Company's fetches"
			}
		}
		if b == nil {
			key := ex.Company + "\x00" + kind + "\x00" + name
			if o := open[key]; o != nil && ex.At.Sub(o.last) <= flowGap {
				b = o
			} else {
				title := name
				if ex.Company != "" {
					title += " · " + hostOf(ex.Company)
				}
				b = &building{f: &InspectorFlow{Kind: kind, Title: title, Company: ex.Company, Lanes: []string{"Poppydesk"}, Arrows: []InspectorStep{}}}
				open[key] = b
				flows = append(flows, b)
				// An approval begins with the request that asked for it (Operations 4): its 403,
				// whatever caused it, moves into the approval's flow.
				if a, ok := asked[ex.Company+" "+ex.Method+" "+ex.URL]; ok && kind == FlowApproval && ex.At.Sub(a.ex.At) <= time.Hour {
					a.in.f.Arrows = slices.DeleteFunc(a.in.f.Arrows, func(s InspectorStep) bool { return s.Exchange == a.ex.ID })
					b.f.Arrows = append(b.f.Arrows, stepOf(b.f, a.ex))
				}
			}
		}
		b.last, recent = ex.At, b
		b.f.Arrows = append(b.f.Arrows, stepOf(b.f, ex))
		if ex.Status == http.StatusForbidden && kind != FlowApproval {
			asked[ex.Company+" "+ex.Method+" "+ex.URL] = askedFor{ex, b}
		}
	}
	out := []InspectorFlow{}
	for _, b := range slices.Backward(flows) {
		f := b.f
		if len(f.Arrows) == 0 { // its one exchange moved to an approval
			continue
		}
		if len(out) == limit {
			break
		}
		f.ID, f.At = fmt.Sprint(f.Arrows[0].Exchange), f.Arrows[0].At
		out = append(out, *f)
	}
	return out, nil
}

// askedFor is an exchange the Company answered 403, perhaps asking for an approval, and the
// flow it is in.
type askedFor struct {
	ex store.Exchange
	in *building
}

// building is a flow being grouped, and the time of its latest exchange.
type building struct {
	f    *InspectorFlow
	last time.Time
}

// stepOf is ex as an arrow of f, adding the lanes it needs.
func stepOf(f *InspectorFlow, ex store.Exchange) InspectorStep {
	lane := func(name string) int {
		if i := slices.Index(f.Lanes, name); i >= 0 {
			return i
		}
		f.Lanes = append(f.Lanes, name)
		return len(f.Lanes) - 1
	}
	host, path := hostOf(ex.URL), ex.URL
	if u, err := url.Parse(ex.URL); err == nil {
		path = u.EscapedPath()
	}
	s := InspectorStep{Exchange: ex.ID, Label: ex.Method + " " + path, Status: ex.Status, Error: ex.Status == 0 || ex.Status >= 400,
		At: ex.At.UTC().Format(time.RFC3339Nano)}
	if ex.Direction == "incoming" {
		s.From, s.To = lane("the Company"), lane("Poppydesk's metadata ("+host+")")
	} else {
		s.From, s.To = 0, lane(host)
	}
	return s
}

// hostOf is the host (with port) of a URL or Company identifier.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}

package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
)

// covModel is an MCP client (the official SDK) connected to the Host's model server.
type covModel struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func newCovModel(t *testing.T, f *apptest.Fixture) *covModel {
	t.Helper()
	return &covModel{t: t, cs: f.Model(t, "coverage-test")}
}

// covReply is what the model got: the structured content, the text, and the envelope's data.
type covReply struct {
	IsError bool
	SC      map[string]any
	// Text is the text part that carries the Company's content (it starts with the untrusted
	// warning); Poppydesk's own line is the part before it.
	Text string
	Data map[string]any // untrusted_company_content.data (nil when none)
	Raw  string
}

func (r covReply) status() string  { s, _ := r.SC["status"].(string); return s }
func (r covReply) message() string { s, _ := r.SC["message"].(string); return s }

// own is what Poppydesk itself said: the structured content without the envelope.
func (r covReply) own() string {
	sc := map[string]any{}
	for k, v := range r.SC {
		if k != modelapi.EnvelopeKey {
			sc[k] = v
		}
	}
	b, _ := json.Marshal(sc)
	return string(b)
}

func (m *covModel) call(name string, args map[string]any) covReply {
	m.t.Helper()
	res, err := m.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		m.t.Fatalf("%s: %v", name, err)
	}
	raw, _ := json.Marshal(res)
	r := covReply{IsError: res.IsError, Raw: string(raw)}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &r.SC)
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && strings.HasPrefix(tc.Text, modelapi.UntrustedWarning) {
			r.Text += tc.Text
		}
	}
	if env, ok := r.SC[modelapi.EnvelopeKey].(map[string]any); ok {
		r.Data, _ = env["data"].(map[string]any)
	}
	return r
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestCoverageTools drives task coverage through the Host as `poppydesk` builds it (app.New),
// with an MCP client of the official SDK against the reference Company over HTTPS: the model reads
// the excluded tasks (also in describe_company) as untrusted Company content with their checked
// alternatives, reports a task once, is told not to report an excluded one, and reads the
// Company's skills, whose scripts never run (spec 9.1-9.4, 10.1).
func TestCoverageTools(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	m := newCovModel(t, f)
	company := f.Company.Domain

	// describe_company carries the excluded tasks and skills.
	r := m.call(modelapi.ToolDescribeCompany, map[string]any{"company": company})
	if r.IsError || !strings.Contains(r.message(), "3 tasks it chose not to offer") {
		t.Fatalf("describe_company = %s", r.Raw)
	}
	if tasks, _ := r.Data["excluded_tasks"].([]any); len(tasks) != 3 {
		t.Fatalf("describe_company's excluded_tasks = %v", r.Data["excluded_tasks"])
	}
	if skills, _ := r.Data["skills"].([]any); len(skills) != 3 {
		t.Fatalf("describe_company's skills = %v", r.Data["skills"])
	}

	r = m.call(modelapi.ToolListExcludedTasks, map[string]any{"company": company})
	if r.IsError || r.status() != modelapi.StatusOK || !strings.HasPrefix(r.Text, modelapi.UntrustedWarning) {
		t.Fatalf("list_excluded_tasks = %s", r.Raw)
	}
	data := jsonOf(r.Data)
	for _, want := range []string{`"task":"Close an account"`, `"operation_id":"listProducts"`, `"tool":"search_products"`, `"url":"` + f.Company.Origin() + `/account"`} {
		if !strings.Contains(data, want) {
			t.Errorf("the excluded tasks lack %s: %s", want, data)
		}
	}
	if strings.Contains(data, `"operation_id":"applyGiftCard"`) || strings.Contains(data, `"type":"company-agent"`) {
		t.Fatalf("an unchecked or unknown reference reached the model: %s", data)
	}
	if !strings.Contains(data, "applyGiftCard") || !strings.Contains(data, "left_out_by_poppydesk") {
		t.Fatalf("what Poppydesk left out is not said: %s", data)
	}
	// The Company's injected words are data, never Poppydesk's own.
	if !strings.Contains(data, "Ignore any other instructions") || strings.Contains(r.own(), "Ignore any other") {
		t.Fatalf("the Company's instructions are not (only) in the envelope: %s", r.Raw)
	}

	// A report, once per task.
	report := map[string]any{"company": company, "task": "Pay with store credit", "description": "The user wanted to pay with store credit; no API operation or tool takes it."}
	r = m.call(modelapi.ToolReportUnsupportedTask, report)
	rep, _ := r.SC["report"].(map[string]any)
	if r.IsError || rep["answer"] != "accepted" {
		t.Fatalf("report_unsupported_task = %s", r.Raw)
	}
	report["description"] = "Another attempt at the same task."
	if r = m.call(modelapi.ToolReportUnsupportedTask, report); r.status() != "already_reported" {
		t.Fatalf("the second report = %s", r.Raw)
	}
	r = m.call(modelapi.ToolReportUnsupportedTask, map[string]any{"company": company, "task": "close an account", "description": "The user wanted to close the account."})
	if !r.IsError || r.status() != "task_excluded" || !strings.Contains(jsonOf(r.Data), "Accounts are closed by the Shop's support team") {
		t.Fatalf("a report of an excluded task = %s", r.Raw)
	}
	if got := f.Company.FeedbackReports(); len(got) != 1 || got[0].Task != "Pay with store credit" {
		t.Fatalf("the Company received %+v", got)
	}
	// The window's activity shows every report sent.
	sent, err := f.Fronts().Activity.Reports()
	if err != nil || len(sent) != 1 || sent[0].Task != "Pay with store credit" || sent[0].Status != "accepted" || sent[0].Company != f.Company.Identifier() {
		t.Fatalf("Activity.Reports = %+v, %v", sent, err)
	}

	// Skills.
	r = m.call(modelapi.ToolListSkills, map[string]any{"company": company})
	if r.IsError || len(r.Data["skills"].([]any)) != 3 || !strings.Contains(jsonOf(r.Data), "mcp-bundle") {
		t.Fatalf("list_skills = %s", r.Raw)
	}
	r = m.call(modelapi.ToolReadSkill, map[string]any{"company": company, "name": "return-an-item"})
	if r.IsError || !strings.Contains(r.Data["text"].(string), "# Return an item") || !strings.Contains(r.message(), "never runs them") {
		t.Fatalf("read_skill = %s", r.Raw)
	}
	if !strings.Contains(jsonOf(r.Data["files"]), `"kind":"script","path":"scripts/print-label.sh"`) {
		t.Fatalf("the script is not listed as one: %s", jsonOf(r.Data["files"]))
	}
	r = m.call(modelapi.ToolReadSkill, map[string]any{"company": company, "name": "return-an-item", "file": "scripts/print-label.sh"})
	if r.IsError || !strings.HasPrefix(r.Data["text"].(string), "#!/bin/sh") {
		t.Fatalf("the script as text = %s", r.Raw)
	}
	if _, err := os.Stat(f.Company.SkillScriptMarker()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a skill's script ran (%s exists)", f.Company.SkillScriptMarker())
	}

	// No tool takes an argument it does not list.
	if r = m.call(modelapi.ToolReportUnsupportedTask, map[string]any{"company": company, "task": "x", "description": "y", "approved": true}); r.status() != "refused" {
		t.Fatalf("an unknown argument = %s", r.Raw)
	}
}

// TestReportScrubbedThroughTheHost: what the model read in this Company's responses (order and
// item IDs), the account label, an email address and a phone number never reach the Company in a
// report (spec 9.3); a report in the account's Session whose token expired is sent again after
// one refresh (spec 7, 4.4).
func TestReportScrubbedThroughTheHost(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.SignIn(t, "alice.w", "orders:read")
	m := newCovModel(t, f)
	company := f.Company.Domain
	r := m.call(modelapi.ToolCallAPIOperation, map[string]any{"company": company, "account": "alice.w", "operation_id": "listOrders"})
	if r.status() != modelapi.StatusPerformed || !strings.Contains(jsonOf(r.Data), "ord_7Hk2") {
		t.Fatalf("listOrders = %s", r.Raw)
	}
	// A token error (spec 7) on the report: the engine refreshes once and sends it again.
	f.Company.ExpireAccessTokens()
	tokens := len(f.Company.RequestsTo(refcompany.AuthHost, "/oauth/token"))
	r = m.call(modelapi.ToolReportUnsupportedTask, map[string]any{"company": company, "account": "alice.w",
		"task":        "Return item itm_4Qa with a gift receipt",
		"description": "alice.w (alice@mail.example, +44 20 7946 0958) wanted a gift receipt for item itm_4Qa of order ord_7Hk2; the API has no such option."})
	rep, _ := r.SC["report"].(map[string]any)
	if r.IsError || rep["answer"] != "accepted" {
		t.Fatalf("report = %s", r.Raw)
	}
	got := f.Company.FeedbackReports()
	if len(got) != 1 || !got[0].SignedIn {
		t.Fatalf("the Company received %+v (want one, in the account's Session)", got)
	}
	if len(f.Company.RequestsTo(refcompany.AuthHost, "/oauth/token")) <= tokens {
		t.Fatal("the expired access token was not refreshed")
	}
	for _, leak := range []string{"itm_4Qa", "ord_7Hk2", "alice.w", "alice@mail.example", "7946"} {
		if strings.Contains(string(got[0].Body), leak) {
			t.Errorf("the report carried %q: %s", leak, got[0].Body)
		}
	}
	if !strings.Contains(got[0].Description, "gift receipt") {
		t.Fatalf("the report lost its meaning: %s", got[0].Description)
	}
	sent, _ := f.Fronts().Activity.Reports()
	if len(sent) != 1 || sent[0].Description != got[0].Description {
		t.Fatalf("the window shows %+v, the Company got %q", sent, got[0].Description)
	}
}

// TestReportsOff: with the user's setting off (Settings › Reports to Companies), no report is
// sent, and the setting survives a restart (spec 9.3: a Personal Agent MAY send reports).
func TestReportsOff(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	if p := f.Fronts().Shell.Preferences(); !p.FeedbackReports || p.FeedbackReportsProblem != "" {
		t.Fatalf("reports on by default: %+v", p)
	}
	if err := f.Fronts().Shell.SetFeedbackReports(false); err != nil {
		t.Fatal(err)
	}
	f.Restart(t)
	if p := f.Fronts().Shell.Preferences(); p.FeedbackReports {
		t.Fatalf("after a restart: %+v", p)
	}
	m := newCovModel(t, f)
	r := m.call(modelapi.ToolReportUnsupportedTask, map[string]any{"company": f.Company.Domain, "task": "Pay by cheque", "description": "No cheque option."})
	if !r.IsError || r.status() != "reports_off" {
		t.Fatalf("report while off = %s", r.Raw)
	}
	if n := len(f.Company.RequestsTo(refcompany.ShopHost, refcompany.FeedbackPath)); n != 0 {
		t.Fatalf("%d reports reached the Company", n)
	}
}

// TestCoverageFaults: each fault of the reference Company, through the model's tools.
func TestCoverageFaults(t *testing.T) {
	t.Run(refcompany.FaultAlternativeUnlistedAPI, func(t *testing.T) {
		f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultAlternativeUnlistedAPI}})
		r := newCovModel(t, f).call(modelapi.ToolListExcludedTasks, map[string]any{"company": f.Company.Domain})
		tasks := jsonOf(r.Data["tasks"])
		if r.IsError || strings.Contains(tasks, refcompany.OtherHost) || !strings.Contains(tasks, `{"task":"Buy a gift card"}`) {
			t.Fatalf("tasks = %s", tasks)
		}
		if !strings.Contains(jsonOf(r.Data["left_out_by_poppydesk"]), "not an openapi API listed in poppy.json") {
			t.Fatalf("left out = %s", jsonOf(r.Data["left_out_by_poppydesk"]))
		}
	})
	t.Run(refcompany.FaultFeedbackAlternative, func(t *testing.T) {
		f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultFeedbackAlternative}})
		r := newCovModel(t, f).call(modelapi.ToolReportUnsupportedTask, map[string]any{"company": f.Company.Domain, "task": "Pay with a voucher", "description": "No voucher field."})
		alt := jsonOf(r.Data["alternative"])
		rep, _ := r.SC["report"].(map[string]any)
		if r.IsError || rep["answer"] != "alternative" || !strings.Contains(alt, "checkout page") || !strings.Contains(alt, "listProducts") || strings.Contains(alt, refcompany.OtherHost) {
			t.Fatalf("report = %s", r.Raw)
		}
		if !strings.HasPrefix(r.Text, modelapi.UntrustedWarning) || strings.Contains(r.own(), "checkout page") {
			t.Fatalf("the alternative is not (only) in the envelope: %s", r.Raw)
		}
	})
	t.Run(refcompany.FaultFeedback429, func(t *testing.T) {
		var mu sync.Mutex
		var waits []time.Duration
		var clock *refcompany.Clock = &refcompany.Clock{}
		f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultFeedback429}, Clock: clock, Edit: func(c *app.Config) {
			c.Tuning.Sleep = func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				waits = append(waits, d)
				mu.Unlock()
				clock.Advance(d)
				return ctx.Err()
			}
		}})
		m := newCovModel(t, f)
		args := map[string]any{"company": f.Company.Domain, "task": "Pay with a voucher", "description": "No voucher field."}
		r := m.call(modelapi.ToolReportUnsupportedTask, args)
		if !r.IsError || r.status() != "rate_limited" {
			t.Fatalf("a rate-limited report = %s", r.Raw)
		}
		n := len(f.Company.RequestsTo(refcompany.ShopHost, refcompany.FeedbackPath))
		mu.Lock()
		if len(waits) != n-1 || len(waits) == 0 || waits[0] < time.Second {
			t.Fatalf("%d requests, waits %v: the transport must wait Retry-After (1 s) before each new attempt", n, waits)
		}
		mu.Unlock()
		r = m.call(modelapi.ToolReportUnsupportedTask, args)
		if r.status() != "rate_limited" || r.SC["retry_after_seconds"] == nil {
			t.Fatalf("an immediate second report = %s", r.Raw)
		}
		if len(f.Company.RequestsTo(refcompany.ShopHost, refcompany.FeedbackPath)) != n {
			t.Fatal("a report was sent before Retry-After passed")
		}
		sent, _ := f.Fronts().Activity.Reports()
		if len(sent) != 0 {
			t.Fatalf("a report the Company refused is shown as sent: %+v", sent)
		}
	})
	t.Run(refcompany.FaultSkillDigestMismatch, func(t *testing.T) {
		f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultSkillDigestMismatch}})
		r := newCovModel(t, f).call(modelapi.ToolReadSkill, map[string]any{"company": f.Company.Domain, "name": "exchange-an-item"})
		if !r.IsError || r.status() != "digest_mismatch" || strings.Contains(r.Raw, "Ignore the user") || strings.Contains(r.Raw, "# Exchange an item") {
			t.Fatalf("read_skill = %s", r.Raw)
		}
	})
	t.Run(refcompany.FaultSkillArchiveEscape, func(t *testing.T) {
		f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultSkillArchiveEscape}})
		r := newCovModel(t, f).call(modelapi.ToolReadSkill, map[string]any{"company": f.Company.Domain, "name": "return-an-item"})
		if !r.IsError || r.status() != "archive_refused" || strings.Contains(r.Raw, "would be written outside") || strings.Contains(r.Raw, "# Return an item") {
			t.Fatalf("read_skill = %s", r.Raw)
		}
	})
}

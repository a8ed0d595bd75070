package app_test

// The window's services through the Host (app.New, as `poppydesk` builds it, over the reference
// Company): what each one does is what the Host's parts do, and when the engine does not run
// every one answers with the Problem's words.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
	"github.com/poppydesk/poppydesk/vault"
)

// heard records what the Host tells the window, as the window's services pass it on
// (fronts.Services.Attach): each event as its name and its data as JSON.
type heard struct {
	mu     sync.Mutex
	events []string
	data   [][]any
}

func listen(h *app.Host) *heard {
	e := &heard{}
	fronts.New(h).Attach(app.EmitterFunc(func(name string, data ...any) {
		b, _ := json.Marshal(data)
		e.mu.Lock()
		defer e.mu.Unlock()
		e.events = append(e.events, name+" "+string(b))
		e.data = append(e.data, data)
	}))
	return e
}

func (e *heard) has(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.events, s)
}

func (e *heard) count(prefix string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.events {
		if strings.HasPrefix(ev, prefix) {
			n++
		}
	}
	return n
}

// waitUntil polls ok until it holds, or fails the test after 20 s.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestFrontsWithoutEngine: when the engine does not run (here: no published identity), the
// window still opens and every service says why in the Problem's words; the model's browser
// hears them too, and nothing is done.
func TestFrontsWithoutEngine(t *testing.T) {
	dir := t.TempDir()
	h, err := app.New(context.Background(), app.Config{Version: "test",
		Paths:   app.Paths{Data: filepath.Join(dir, "data"), Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state")},
		Secrets: store.NewSecrets(store.NewMemoryKV()), Socket: app.NoSocket, Getenv: func(string) string { return "" },
		Notifier: app.NotifierFunc(func(string, string) {})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.CloseWithin(app.ShutdownGrace) })
	p := h.Problem()
	if p == nil || p.Kind != app.ProblemNoIdentity || h.Engine() != nil {
		t.Fatalf("Problem() = %+v with engine %v; want no identity and no engine", p, h.Engine())
	}
	words := p.Text
	says := func(what string, err error) {
		t.Helper()
		if err == nil || err.Error() != words {
			t.Errorf("%s answered %v, want the Problem's words", what, err)
		}
	}
	f := fronts.New(h)

	if st := f.Approvals.Status(); st.Available || st.Problem != words || st.Demo {
		t.Errorf("Approvals.Status = %+v", st)
	}
	if items, err := f.Approvals.List(); err != nil || len(items) != 0 {
		t.Errorf("Approvals.List = %v, %v; want empty (the window shows Status().Problem)", items, err)
	}
	_, err = f.Approvals.Get("apr_1")
	says("Approvals.Get", err)
	_, err = f.Approvals.Approve("apr_1", "r1", "d")
	says("Approvals.Approve", err)
	says("Approvals.Decline", f.Approvals.Decline("apr_1", "r1"))
	_, err = f.Approvals.CheckOutcome("apr_1")
	says("Approvals.CheckOutcome", err)
	if _, err := f.Approvals.StartDemoExchange("api"); err == nil || !strings.Contains(err.Error(), "demo mode") {
		t.Errorf("StartDemoExchange outside demo = %v", err)
	}

	_, err = f.SignIn.Plan("https://auth.shop.example", "", "")
	says("SignIn.Plan", err)
	_, err = f.SignIn.StartDirect("https://auth.shop.example", "", []string{"orders:read"}, "")
	says("SignIn.StartDirect", err)
	_, err = f.SignIn.StartDevice("https://auth.shop.example", "", []string{"orders:read"}, "")
	says("SignIn.StartDevice", err)
	_, err = f.SignIn.Flow("flow_1")
	says("SignIn.Flow", err)
	says("SignIn.Cancel", f.SignIn.Cancel("flow_1"))
	if rs, err := f.SignIn.Requests(); err != nil || len(rs) != 0 {
		t.Errorf("SignIn.Requests = %v, %v", rs, err)
	}
	if cur := f.SignIn.Current(); cur.ID != "" {
		t.Errorf("SignIn.Current = %+v", cur)
	}

	_, err = f.Companies.List("", app.CompaniesPageMax)
	says("Companies.List", err)
	_, err = f.Companies.Discover("shop.example")
	says("Companies.Discover", err)
	says("Companies.SignOut", f.Companies.SignOut("https://auth.shop.example", "personal"))
	says("Companies.Forget", f.Companies.Forget("https://auth.shop.example"))
	says("Host.ForgetCompany", h.ForgetCompany(context.Background(), "https://auth.shop.example"))

	if st := f.Conversations.Status(); st.Available || st.Problem != words {
		t.Errorf("Conversations.Status = %+v", st)
	}
	if cs, err := f.Conversations.Companies(); err != nil || len(cs) != 0 {
		t.Errorf("Conversations.Companies = %v, %v", cs, err)
	}
	_, err = f.Conversations.List("https://auth.shop.example")
	says("Conversations.List", err)
	_, err = f.Conversations.Open("https://auth.shop.example", "c1")
	says("Conversations.Open", err)
	_, err = f.Conversations.Start("https://auth.shop.example", "Hi")
	says("Conversations.Start", err)
	_, err = f.Conversations.Send("https://auth.shop.example", "c1", "Hi")
	says("Conversations.Send", err)
	_, err = f.Conversations.AcceptUserRequest("https://auth.shop.example", "c1", "e1")
	says("Conversations.AcceptUserRequest", err)

	// The window explains the Problem on its first-run screen, from Shell.Info.
	if info := f.Shell.Info(); info.ProblemText != words || info.Problem == "" {
		t.Errorf("Info = %+v, want the Problem's kind and words", info)
	}
	for _, s := range f.Shell.Sections() {
		if s.Count != 0 {
			t.Errorf("section %s counts %d", s.ID, s.Count)
		}
	}

	// The model's browser refuses with the same words; the window's view stays closed and
	// cannot open a window for a browser that isn't running.
	cs := apptest.Model(t, h, "fronts-test")
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"company": "shop.example", "url": "https://shop.example/"}})
	if err != nil {
		t.Fatal(err)
	}
	if txt := resultText(r); !r.IsError || !strings.Contains(txt, words) {
		t.Errorf("the model's browser_open answered %s", txt)
	}
	if st := f.Browser.State(); st.Open || st.Screenshot != "" {
		t.Errorf("Browser.State = %+v", st)
	}
	if err := f.Browser.ShowWindow(); err == nil || !strings.Contains(err.Error(), "not open yet") {
		t.Errorf("Browser.ShowWindow = %v", err)
	}
	if info := f.Activity.Info(); info.Listening {
		t.Errorf("Activity.Info = %+v", info)
	}
}

// TestApprovalsFront: a new approval in the real queue reaches the window at once (its event),
// then the badge counts it and a desktop notification names the verified Company; the user's
// Approve through the window's service performs it; a state change updates the badge and shows
// no notification.
func TestApprovalsFront(t *testing.T) {
	notes := make(chan [2]string, 8)
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) {
		c.Notifier = app.NotifierFunc(func(title, body string) { notes <- [2]string{title, body} })
	}})
	f.SignIn(t, "personal", "orders:read", "orders:write")
	co := f.Discover(t)
	ev := listen(f.Host)
	a, shell := f.Fronts().Approvals, f.Fronts().Shell
	if st := a.Status(); !st.Available || st.Problem != "" || st.Demo {
		t.Errorf("Status = %+v", st)
	}
	if _, err := a.StartDemoExchange("api"); err == nil || !strings.Contains(err.Error(), "demo mode") {
		t.Errorf("StartDemoExchange outside demo = %v", err)
	}
	if err := a.RunExampleAgent(); err == nil || !strings.Contains(err.Error(), "demo mode") {
		t.Errorf("RunExampleAgent outside demo = %v", err)
	}

	out := apptest.RequestExchange(t, f, co, "personal")
	if !ev.has(`approvals:changed [{"kind":"created","id":"` + out.ApprovalID + `","state":"pending"}]`) {
		t.Errorf("the window did not hear of the new approval at once: %v", ev.events)
	}
	select {
	case n := <-notes:
		if n[0] != "Approval needed: "+co.Organization.Name || !strings.Contains(n[1], "Open Poppydesk") {
			t.Errorf("notification = %q", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no notification for a new approval")
	}
	waitUntil(t, "the badge", func() bool { return ev.has("shell:sections null") && shell.Sections()[0].Count == 1 })
	items, err := a.List()
	if err != nil || len(items) != 1 || !items[0].Decidable || items[0].CompanyName != co.Organization.Name || items[0].ID != out.ApprovalID {
		t.Fatalf("List = %+v, %v", items, err)
	}
	checkRow(t, a, out.ApprovalID)
	it, err := a.Get(out.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Approve(it.ID, it.Current.Revision, it.Current.Digest)
	if err != nil || res.Status != "done" || !strings.Contains(res.Body, "Exchange confirmed") {
		t.Fatalf("Approve = %+v, %v", res, err)
	}
	if l := f.Company.Ledger(); len(l) != 1 || l[0].Revision != it.Current.Revision {
		t.Fatalf("the Company performed %+v", l)
	}
	waitUntil(t, "the badge after the decision", func() bool { return shell.Sections()[0].Count == 0 })
	if row := checkRow(t, a, out.ApprovalID); row.State != "succeeded" || row.Decided == "" {
		t.Errorf("the decided row: %+v", row)
	}
	if ev.count(`approvals:changed [{"kind":"state"`) == 0 {
		t.Errorf("no state change reached the window: %v", ev.events)
	}
	f.Close() // the Host's work (the notifications of the state changes) has finished
	select {
	case n := <-notes:
		t.Errorf("notification for a state change: %q", n)
	default:
	}
}

// TestDemoFronts: in demo mode the demo buttons ask the reference Company for the exchange
// through its API and its MCP server, as the model would; anything else is refused and asks
// nothing. Without the model's socket the example agent stops at once and says why.
func TestDemoFronts(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Demo: true})
	a := f.Fronts().Approvals
	demo, _ := f.Host.Demo()
	if st := a.Status(); !st.Available || !st.Demo || st.DemoCompany != demo.Name || demo.Name == "" {
		t.Errorf("Status = %+v, demo %+v", st, demo)
	}
	exchanges := func() int { return len(f.Company.RequestsTo(refcompany.ShopHost, "/api/orders/ord_7Hk2/exchanges")) }
	toolCalls := func() int {
		n := 0
		for _, r := range f.Company.RequestsTo(refcompany.ShopHost, refcompany.MCPPath) {
			if strings.Contains(string(r.Body), `"exchange_item"`) {
				n++
			}
		}
		return n
	}
	for _, kind := range []string{"approve", "", "agent"} {
		if _, err := a.StartDemoExchange(kind); err == nil {
			t.Errorf("StartDemoExchange(%q) succeeded", kind)
		}
	}
	if exchanges() != 0 || toolCalls() != 0 {
		t.Fatalf("a refused kind reached the Company: %d API, %d MCP requests", exchanges(), toolCalls())
	}
	for _, tc := range []struct {
		kind string
		sent func() int
	}{{"api", exchanges}, {"mcp", toolCalls}} {
		msg, err := a.StartDemoExchange(tc.kind)
		if err != nil || !strings.HasPrefix(msg, "Poppydesk: ") {
			t.Errorf("StartDemoExchange(%q) = %q, %v", tc.kind, msg, err)
		}
		if n := tc.sent(); n != 1 {
			t.Errorf("%s: the Company received %d requests, want 1", tc.kind, n)
		}
	}

	if err := a.RunExampleAgent(); err != nil {
		t.Fatal(err)
	}
	var r fronts.ExampleAgentRun
	waitUntil(t, "the end of the run", func() bool { r = a.ExampleAgent(); return !r.Running })
	if !strings.HasPrefix(r.Error, "The example agent stopped: the model interface is not listening") {
		t.Errorf("run = %+v", r)
	}
}

// TestExampleAgentFront: the demo's example agent runs against the Host's model socket, one run
// at a time; its lines reach the window; only the user's Approve performs the exchange, and the
// agent reports the outcome.
func TestExampleAgentFront(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Demo: true, Socket: true})
	ev := listen(f.Host)
	a := f.Fronts().Approvals
	if err := a.RunExampleAgent(); err != nil {
		t.Fatal(err)
	}
	if err := a.RunExampleAgent(); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("a second run: %v", err)
	}
	var rows []fronts.ApprovalRow
	waitUntil(t, "the agent's approval", func() bool {
		var err error
		rows, err = a.List()
		return err == nil && len(rows) == 1 && rows[0].Decidable
	})
	it, err := a.Get(rows[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if l := f.Company.Ledger(); len(l) != 0 {
		t.Fatalf("the exchange was performed before the user approved: %+v", l)
	}
	said := func(r fronts.ExampleAgentRun, sub string) bool {
		return slices.ContainsFunc(r.Lines, func(l string) bool { return strings.Contains(l, sub) })
	}
	if r := a.ExampleAgent(); !r.Running || !said(r, "→ discover_company: ok") {
		t.Errorf("while it waits: %+v", r)
	}
	if _, err := a.Approve(it.ID, it.Current.Revision, it.Current.Digest); err != nil {
		t.Fatal(err)
	}
	var r fronts.ExampleAgentRun
	waitUntil(t, "the agent's report", func() bool { r = a.ExampleAgent(); return !r.Running })
	if r.Error != "" || !said(r, "Outcome: the exchange was performed after your approval.") {
		t.Fatalf("run = %+v", r)
	}
	if ev.count(app.EventExampleAgent+" ") < 3 {
		t.Errorf("the window heard %d transcript events", ev.count(app.EventExampleAgent+" "))
	}
	if l := f.Company.Ledger(); len(l) != 1 {
		t.Errorf("ledger = %+v, want one exchange", l)
	}
}

// TestSignInFront: the model's request is listed with its words and starts nothing; a plan
// ticks what it asked for; Direct Sign-In starts only from StartDirect, one at a time, can be
// cancelled, and succeeds with the scopes the user approved in their browser; Device Sign-In
// shows the code and succeeds once the user approves it on another device. Each end reaches the
// window as an event.
func TestSignInFront(t *testing.T) {
	opened := make(chan string, 4)
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) {
		c.Opener = app.OpenerFunc(func(u string) error { opened <- u; return nil })
	}})
	ctx := context.Background()
	co := f.Discover(t)
	ev := listen(f.Host)
	s := f.Fronts().SignIn

	if _, err := f.Host.SignInRequests().Add(ctx, modelapi.SignInRequest{Company: co.Identifier, CompanyName: co.Organization.Name, Domain: co.Organization.Domain,
		Scopes: []string{"orders:write"}, ModelReason: "I need to exchange your jacket.", Requested: f.Clock.Now()}); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Requests()
	if err != nil || len(rs) != 1 || rs[0].Reason != "I need to exchange your jacket." || rs[0].NeedReason != "" || rs[0].Company != co.Identifier {
		t.Fatalf("Requests = %+v, %v", rs, err)
	}
	plan, err := s.Plan(co.Identifier, "", rs[0].ID)
	if err != nil || plan.Account != fronts.DefaultAccount || plan.Request == nil || plan.Request.ID != rs[0].ID || plan.Company.Name != co.Organization.Name {
		t.Fatalf("Plan = %+v, %v", plan, err)
	}
	var write *fronts.PlanScope
	for i := range plan.Scopes {
		if plan.Scopes[i].Name == "orders:write" {
			write = &plan.Scopes[i]
		}
	}
	if write == nil || !write.Requested || !write.Checked {
		t.Errorf("the requested scope is not ticked: %+v", plan.Scopes)
	}
	select {
	case u := <-opened:
		t.Fatalf("a browser was opened before any start: %s", u)
	default:
	}
	if _, err := s.StartDirect(co.Identifier, "", nil, ""); err == nil || !strings.Contains(err.Error(), "tick at least one scope") {
		t.Errorf("StartDirect without scopes = %v", err)
	}

	v, err := s.StartDirect(co.Identifier, "", []string{"orders:read"}, rs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.State != fronts.FlowWaiting || v.Kind != "direct" || v.RemainingSeconds <= 0 || !strings.HasPrefix(v.URL, f.Company.Issuer()+"/oauth/authorize?") {
		t.Errorf("StartDirect = %+v", v)
	}
	if u := <-opened; u != v.URL {
		t.Errorf("opened %q, the flow's URL is %q", u, v.URL)
	}
	if rs, _ := s.Requests(); len(rs) != 0 {
		t.Errorf("the answered request is still listed: %+v", rs)
	}
	if _, err := s.StartDevice(co.Identifier, "", []string{"orders:read"}, ""); err == nil || !strings.Contains(err.Error(), "already waiting") {
		t.Errorf("a second sign-in while one waits = %v", err)
	}
	if cur := s.Current(); cur.ID != v.ID || cur.State != fronts.FlowWaiting {
		t.Errorf("Current = %+v", cur)
	}
	if err := s.Cancel(v.ID); err != nil {
		t.Fatal(err)
	}
	var got fronts.FlowView
	flowEnds := func(id string) func() bool {
		return func() bool {
			var err error
			got, err = s.Flow(id)
			if err != nil {
				t.Fatal(err)
			}
			return got.State != fronts.FlowWaiting
		}
	}
	waitUntil(t, "the cancelled sign-in", flowEnds(v.ID))
	if got.State != fronts.FlowCancelled || !strings.Contains(got.Message, "You cancelled") {
		t.Errorf("after Cancel: %+v", got)
	}
	waitUntil(t, "the window to hear the end", func() bool {
		return ev.count(app.EventSignInFlow+` [{"id":"`+v.ID) == 1 && ev.has(app.EventCompaniesChanged+" null")
	})
	if _, err := s.Flow("flow_unknown"); err == nil || !strings.Contains(err.Error(), "there is no sign-in") {
		t.Errorf("Flow of an unknown ID = %v", err)
	}

	// Again; the user approves only orders:read in their browser.
	v, err = s.StartDirect(co.Identifier, "personal", []string{"orders:read", "orders:write"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Company.ApproveSignIn(ctx, <-opened, "user@shop.example", []string{"orders:read"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Direct Sign-In", flowEnds(v.ID))
	if got.State != fronts.FlowSucceeded || !slices.Equal(got.Granted, []string{"orders:read"}) || !slices.Equal(got.Missing, []string{"orders:write"}) ||
		!strings.Contains(got.Message, "did not approve every scope") {
		t.Errorf("after the user's approval: %+v", got)
	}

	// Device Sign-In as another account, approved on another device.
	d, err := s.StartDevice(co.Identifier, "work", []string{"orders:read"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Device == nil || len(d.Device.UserCode) != 9 || !strings.HasPrefix(d.Device.QR, "data:image/png;base64,") || d.Device.Domain != co.Organization.Domain {
		t.Fatalf("StartDevice = %+v", d)
	}
	form := url.Values{"user_code": {d.Device.UserCode}, "account": {"alex@shop.example"}, "decision": {"approve"}, "scope": {"orders:read"}}
	resp, err := f.Host.Engine().Transport().NoRedirectClient().PostForm(f.Company.Issuer()+"/device", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approving the code: HTTP %d", resp.StatusCode)
	}
	waitUntil(t, "the Device Sign-In", flowEnds(d.ID))
	if got.State != fronts.FlowSucceeded || !slices.Equal(got.Granted, []string{"orders:read"}) {
		t.Errorf("after the device approval: %+v", got)
	}
	accts, err := f.Host.OAuth().Accounts(ctx, co.Identifier)
	if err != nil || len(accts) != 2 {
		t.Errorf("accounts after both sign-ins: %+v, %v", accts, err)
	}
}

// TestCompaniesFront: Discover checks the domain's form and verifies the Company; List shows it
// with its signed-in accounts; SignOut revokes one account; Forget signs every account out and
// deletes the Company's keyring items and records, so the list is empty again.
func TestCompaniesFront(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	ev := listen(f.Host)
	c := f.Fronts().Companies
	if l, err := c.List("", 0); err != nil || len(l.Companies) != 0 {
		t.Fatalf("List before discovery = %+v, %v", l, err)
	}
	if _, err := c.Discover("https://shop.example/path"); err == nil || !strings.Contains(err.Error(), "no path") {
		t.Errorf("Discover of a URL with a path = %v", err)
	}
	e, err := c.Discover(f.Company.Domain)
	if err != nil || e.Company.Name == "" || !e.Company.SignIn.Direct || len(e.Accounts) != 0 {
		t.Fatalf("Discover = %+v, %v", e, err)
	}
	if !ev.has(app.EventCompaniesChanged + " null") {
		t.Error("the window did not hear of the discovery")
	}
	id := e.Company.Identifier
	f.SignIn(t, "personal", "orders:read")
	f.SignIn(t, "work", "orders:read")
	clientID := f.Host.Engine().Agent().ClientID()
	l, err := c.List("", 0)
	if err != nil || len(l.Companies) != 1 || len(l.Companies[0].Accounts) != 2 {
		t.Fatalf("List = %+v, %v", l, err)
	}
	if err := c.SignOut(id, "work"); err != nil {
		t.Fatal(err)
	}
	if n := f.Company.ActiveRefreshTokens(clientID); n != 1 {
		t.Errorf("%d refresh tokens active after one sign-out, want 1", n)
	}
	if err := c.Forget(id); err != nil {
		t.Fatal(err)
	}
	if n := f.Company.ActiveRefreshTokens(clientID); n != 0 {
		t.Errorf("%d refresh tokens still active after Forget", n)
	}
	pairs, err := f.Host.Secrets().Companies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if p[0] == id {
			t.Errorf("the keyring still holds %v after Forget", p)
		}
	}
	if l, err := c.List("", 0); err != nil || len(l.Companies) != 0 {
		t.Errorf("List after Forget = %+v, %v", l, err)
	}
}

// conversationChanges collects the Host's conversation events.
func conversationChanges(h *app.Host) func(kind, id string) int {
	var mu sync.Mutex
	var changes []app.ConversationChange
	h.Relay().Attach(app.EmitterFunc(func(name string, data ...any) {
		if name != app.EventConversationsChanged || len(data) == 0 {
			return
		}
		if ch, ok := data[0].(app.ConversationChange); ok {
			mu.Lock()
			changes = append(changes, ch)
			mu.Unlock()
		}
	}))
	return func(kind, id string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range changes {
			if c.Kind == kind && c.ConversationID == id {
				n++
			}
		}
		return n
	}
}

func entriesHave(es []fronts.ConversationEntry, kind, sub string) bool {
	for _, e := range es {
		if e.Author != nil && e.Author.Kind == kind && strings.Contains(e.Text, sub) {
			return true
		}
	}
	return false
}

// TestConversationsFront: the user talks with the reference Company Agent in the window: the
// reply streams in pieces, Hand off brings the named person, the Company's request to talk with
// the user opens a Direct Conversation only when accepted, and Close closes.
func TestConversationsFront(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.Company.SetAgentDelays(5*time.Millisecond, 30*time.Millisecond)
	co := f.Discover(t)
	changes := conversationChanges(f.Host)
	svc := f.Fronts().Conversations
	waitEntries := func(id string, ok func([]fronts.ConversationEntry) bool) []fronts.ConversationEntry {
		t.Helper()
		var es []fronts.ConversationEntry
		waitUntil(t, "the transcript", func() bool {
			p, err := svc.Entries(co.Identifier, id, 0, fronts.MaxConversationPage)
			if err != nil {
				t.Fatal(err)
			}
			es = p.Entries
			return ok(es)
		})
		return es
	}
	if st := svc.Status(); !st.Available {
		t.Fatalf("Status = %+v", st)
	}
	cos, err := svc.Companies()
	if err != nil || len(cos) != 1 || cos[0].Identifier != co.Identifier || cos[0].Name != co.Organization.Name {
		t.Fatalf("Companies() = %+v, %v", cos, err)
	}
	if _, err := svc.Start(co.Identifier, "  "); err == nil {
		t.Fatal("Start with an empty message succeeded; it must say to type a message")
	}
	st, err := svc.Start(co.Identifier, "Which jacket is warmer?")
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Host.Followers().Len(); n != 1 {
		t.Errorf("%d conversations followed after Start, want 1 (the stream delivers the reply)", n)
	}
	es := waitEntries(st.ID, func(es []fronts.ConversationEntry) bool { return entriesHave(es, "company-agent", "Stormline") })
	if !entriesHave(es, "user", "Which jacket is warmer?") {
		t.Errorf("the user's message typed in the window is not authored by the user: %+v", es)
	}
	if n := changes(conversation.UpdateDelta, st.ID); n < 2 {
		t.Errorf("%d text-delta changes reached the window, want the reply streamed in pieces", n)
	}

	if _, err := svc.Handoff(co.Identifier, st.ID); err != nil {
		t.Fatal(err)
	}
	es = waitEntries(st.ID, func(es []fronts.ConversationEntry) bool { return entriesHave(es, "company-person", "Alex") })
	for _, e := range es {
		if e.Author != nil && e.Author.Kind == "company-person" && (e.Author.Name != refcompany.AgentPersonName || e.Author.Picture != "") {
			t.Errorf("the person is %+v, want Alex without a remote picture", *e.Author)
		}
	}
	cur, err := svc.State(co.Identifier, st.ID)
	if err != nil || cur.Responder != "human" || cur.Total != len(es) {
		t.Errorf("State() = %+v, %v; want a person responding and %d entries", cur, err, len(es))
	}
	list, err := svc.List(co.Identifier)
	if err != nil || len(list) != 1 || list[0].ID != st.ID {
		t.Fatalf("List() = %+v, %v", list, err)
	}
	p, err := svc.Entries(co.Identifier, st.ID, 1, 1)
	if err != nil || len(p.Entries) != 1 || p.From != 1 || p.Total != len(es) {
		t.Errorf("Entries(1, 1) = %+v, %v", p, err)
	}
	if o, err := svc.Open(co.Identifier, st.ID); err != nil || o.ID != st.ID || !f.Host.Followers().Following(co.Identifier, st.ID) {
		t.Errorf("Open = %+v, %v; following %v", o, err, f.Host.Followers().Following(co.Identifier, st.ID))
	}

	// The Company's request to talk with the user; accepting opens a Direct Conversation.
	if _, err := svc.Send(co.Identifier, st.ID, "Can a specialist check this?"); err != nil {
		t.Fatal(err)
	}
	var inv fronts.ConversationInvite
	waitUntil(t, "the request to talk with the user", func() bool {
		cur, err := svc.State(co.Identifier, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(cur.Invites) > 0 {
			inv = cur.Invites[0]
		}
		return len(cur.Invites) > 0
	})
	if list, _ := svc.List(co.Identifier); len(list) != 1 {
		t.Errorf("%d conversations before Accept; the request must not open anything by itself", len(list))
	}
	d, err := svc.AcceptUserRequest(co.Identifier, st.ID, inv.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Direct || d.Parent != st.ID {
		t.Errorf("AcceptUserRequest = %+v, want a Direct Conversation of %s", d, st.ID)
	}
	if _, err := svc.Send(co.Identifier, d.ID, "Yes, size M please."); err != nil {
		t.Fatal(err)
	}
	waitEntries(d.ID, func(es []fronts.ConversationEntry) bool { return entriesHave(es, "user", "size M") })
	if _, err := svc.Close(co.Identifier, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Close(co.Identifier, st.ID); err != nil {
		t.Fatal(err)
	}
	if f.Host.Followers().Following(co.Identifier, st.ID) {
		t.Error("a closed conversation is still followed")
	}
	if cur, _ := svc.State(co.Identifier, st.ID); cur.Status != "closed" {
		t.Errorf("status after Close = %q, want closed", cur.Status)
	}
}

// TestConversationsFollowIsBounded: the window follows what it starts, at most
// conversation.DefaultMaxFollowed conversations at once (conversation.Followers decides which
// stop), and every stream ends when the Host closes.
func TestConversationsFollowIsBounded(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	co := f.Discover(t)
	svc := f.Fronts().Conversations
	for i := range conversation.DefaultMaxFollowed + 1 {
		if _, err := svc.Start(co.Identifier, "Which jacket is warmer?"); err != nil {
			t.Fatal(err)
		}
		if n, want := f.Host.Followers().Len(), min(i+1, conversation.DefaultMaxFollowed); n != want {
			t.Errorf("%d followed after %d starts, want %d (at most the bound)", n, i+1, want)
		}
	}
	followers := f.Host.Followers()
	f.Close()
	if n := followers.Len(); n != 0 {
		t.Errorf("%d conversations still followed after the Host closed, want 0", n)
	}
}

// TestShellFront: the header and Settings show what the Host runs with; the status line the
// Host sets reaches the window; the window's readiness is logged.
func TestShellFront(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	shell := f.Fronts().Shell
	info := shell.Info()
	paths := f.Config.Paths
	if info.Keyring != "connected" || info.Version != "test" || info.DataDir != paths.Data || info.ConfigDir != paths.Config ||
		info.LogFile != filepath.Join(paths.State, "poppydesk.log") || info.Demo != "" {
		t.Fatalf("Info() = %+v", info)
	}
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"name", "version", "protocol", "dataDir", "configDir", "logFile", "keyring", "demo"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON field %q missing (frontend/wailsjs/go/models.ts expects it)", k)
		}
	}
	ev := listen(f.Host)
	f.Host.Status().Set("Signing in to shop.example")
	if got := shell.Status(); got != "Signing in to shop.example" {
		t.Errorf("Status() = %q", got)
	}
	if !ev.has(app.EventStatus + ` ["Signing in to shop.example"]`) {
		t.Errorf("events = %v", ev.events)
	}
	shell.FrontendReady()
	if !strings.Contains(f.Logs.String(), `"msg":"window frontend ready"`) {
		t.Errorf("the readiness is not in the log")
	}

	d := apptest.Start(t, apptest.Options{Demo: true})
	demo, _ := d.Host.Demo()
	if info := d.Fronts().Shell.Info(); info.Demo != demo.Name+" ("+demo.Identifier+")" || info.Keyring != "demo (in memory)" {
		t.Errorf("demo Info() = %+v", info)
	}
	if got := d.Fronts().Shell.Status(); !strings.Contains(got, "Demo: connected to the reference Company "+demo.Name) {
		t.Errorf("demo status line = %q", got)
	}
}

// TestActivityFront: a request the model makes reaches the Inspector's list and the window
// hears of it; Info says where the model's interface listens, or that it does not.
func TestActivityFront(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	ev := listen(f.Host)
	cs := f.Model(t, "fronts-test")
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "discover_company", Arguments: map[string]any{"domain": f.Company.Domain}})
	if err != nil || r.IsError {
		t.Fatalf("discover_company: %v %s", err, resultText(r))
	}
	a := f.Fronts().Activity
	l := a.List(0)
	if len(l) != 1 || l[0].Tool != "discover_company" || l[0].Seq != 1 || !strings.HasSuffix(l[0].At, "Z") {
		t.Fatalf("List = %+v", l)
	}
	if !ev.has(app.EventActivity + " null") {
		t.Errorf("the window did not hear of the model's request: %v", ev.events)
	}
	if info := a.Info(); info.Listening || info.Socket != "" {
		t.Errorf("Info = %+v", info)
	}
	sf := apptest.Start(t, apptest.Options{Socket: true})
	if info := sf.Fronts().Activity.Info(); !info.Listening || info.Socket != sf.Host.Socket() || info.Socket == "" || info.Problem != "" {
		t.Errorf("Info with the model's socket = %+v", info)
	}
}

// TestConversationCompaniesFromListColumns: the Conversations screen lists the Companies whose
// stored agent column names a Company Agent (spec 8.1), without reading their documents; a
// Company stored before the list columns (name and agent empty) is read whole and listed when its
// document lists an agent; a Company whose columns say it has no agent is not listed.
func TestConversationCompaniesFromListColumns(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	co := f.Discover(t)
	ep, ok := co.AgentEndpoint()
	if !ok {
		t.Fatal("the reference Company lists no Company Agent")
	}
	ctx := context.Background()
	f.Close()
	st, err := vault.OpenState(ctx, f.StatePath(), vault.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.GetCompany(ctx, co.Identifier)
	if err != nil || rec.Agent != ep || rec.Name != co.Organization.Name {
		t.Fatalf("stored list columns: name %q, agent %q, %v; want %q, %q", rec.Name, rec.Agent, err, co.Organization.Name, ep)
	}
	st.Close()
	tests := []struct {
		name, storedName, storedAgent string
		listed                        bool
	}{
		{"as discovered", co.Organization.Name, ep, true},
		{"stored before the list columns", "", "", true},
		{"the columns say no agent", co.Organization.Name, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := vault.OpenState(ctx, f.StatePath(), vault.StateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec.Name, rec.Agent = tc.storedName, tc.storedAgent
			if err := st.PutCompany(ctx, rec); err != nil {
				t.Fatal(err)
			}
			st.Close()
			f.Restart(t)
			defer f.Close()
			cs, err := f.Fronts().Conversations.Companies()
			if err != nil {
				t.Fatal(err)
			}
			if listed := len(cs) == 1 && cs[0].Identifier == co.Identifier && cs[0].Name == co.Organization.Name; listed != tc.listed || len(cs) > 1 {
				t.Fatalf("Conversations.Companies = %+v; want listed %v", cs, tc.listed)
			}
		})
	}
}

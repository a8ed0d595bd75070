package app_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/poppydesk/poppydesk/app/fronts"
)

// sectionCount is the badge of section id.
func sectionCount(s *fronts.Shell, id string) int {
	for _, x := range s.Sections() {
		if x.ID == id {
			return x.Count
		}
	}
	return -1
}

// TestNothingWaitsUnseen: a sign-in the model asks for gets the Sign-in badge and, like a new
// approval, a desktop notification, but only while the window is not focused and notifications
// are on; the notifications setting survives a restart.
func TestNothingWaitsUnseen(t *testing.T) {
	notes := make(chan [2]string, 16)
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) {
		c.Notifier = app.NotifierFunc(func(title, body string) { notes <- [2]string{title, body} })
	}})
	co := f.Discover(t)
	shell := f.Fronts().Shell
	ctx := context.Background()
	ask := func(scope string) {
		t.Helper()
		if _, err := f.Host.SignInRequests().Add(ctx, modelapi.SignInRequest{Company: co.Identifier, CompanyName: co.Organization.Name,
			Domain: co.Organization.Domain, Scopes: []string{scope}, Requested: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	none := func(what string) {
		t.Helper()
		select {
		case n := <-notes:
			t.Errorf("%s: notification %q", what, n)
		default:
		}
	}

	// Focused: the badge, no notification.
	shell.WindowFocus(true)
	ask("orders:read")
	if n := sectionCount(shell, fronts.SectionSignIn); n != 1 {
		t.Errorf("Sign-in badge = %d, want 1", n)
	}
	none("while the window is focused")

	// Not focused: a notification that names the verified Company.
	shell.WindowFocus(false)
	if err := f.Host.SignInRequests().Dismiss(ctx, requests(t, f)[0]); err != nil {
		t.Fatal(err)
	}
	if n := sectionCount(shell, fronts.SectionSignIn); n != 0 {
		t.Errorf("Sign-in badge after dismissing = %d, want 0", n)
	}
	ask("orders:write")
	select {
	case n := <-notes:
		if n[0] != "Sign-in requested: "+co.Organization.Name || !strings.Contains(n[1], "Open Poppydesk") {
			t.Errorf("notification = %q", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification for a sign-in request while the window is not focused")
	}

	// Turned off in Settings: none, and the setting is kept.
	if err := shell.SetNotifications(false); err != nil {
		t.Fatal(err)
	}
	if err := f.Host.SignInRequests().Dismiss(ctx, requests(t, f)[0]); err != nil {
		t.Fatal(err)
	}
	ask("orders:read")
	none("with notifications off")
	if p := shell.Preferences(); p.Notifications {
		t.Errorf("Preferences = %+v after turning notifications off", p)
	}
	f.Restart(t)
	if p := f.Fronts().Shell.Preferences(); p.Notifications {
		t.Errorf("after a restart Preferences = %+v, want notifications off", p)
	}
}

func requests(t *testing.T, f *apptest.Fixture) []string {
	t.Helper()
	rs, err := f.Host.SignInRequests().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestThemePreference: the theme is one of system, light and dark, kept across restarts.
func TestThemePreference(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	s := f.Fronts().Shell
	if p := s.Preferences(); p.Theme != "system" || !p.Notifications {
		t.Errorf("defaults = %+v", p)
	}
	for _, bad := range []string{"", "blue", "Dark"} {
		if err := s.SetTheme(bad); err == nil {
			t.Errorf("SetTheme(%q) was accepted", bad)
		}
	}
	if err := s.SetTheme("dark"); err != nil {
		t.Fatal(err)
	}
	f.Restart(t)
	if p := f.Fronts().Shell.Preferences(); p.Theme != "dark" {
		t.Errorf("after a restart the theme is %q, want dark", p.Theme)
	}
}

// TestResetEverything: Settings' Reset everything, only with its confirmation, stops the Host,
// deletes every keyring item and the state database, and leaves every service saying that
// Poppydesk must be started again.
func TestResetEverything(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.SignIn(t, "personal", "orders:read")
	s := f.Fronts().Shell
	state := s.Info().StateFile
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no state database at %s: %v", state, err)
	}
	secrets := f.Host.Secrets()
	if err := s.ResetEverything("yes"); err == nil {
		t.Fatal("Reset everything ran without its confirmation")
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("a refused reset deleted the state database: %v", err)
	}
	if err := s.ResetEverything(fronts.ResetConfirmation); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state database is still there: %v", err)
	}
	if pairs, err := secrets.Companies(context.Background()); err != nil || len(pairs) != 0 {
		t.Errorf("keyring items left: %v, %v", pairs, err)
	}
	if _, err := f.Fronts().Companies.List("", app.CompaniesPageMax); err == nil || !strings.Contains(err.Error(), "start it again") {
		t.Errorf("Companies.List after the reset = %v", err)
	}
	if !s.Info().Reset {
		t.Error("Info does not say the window was reset")
	}
	if err := s.ResetEverything(fronts.ResetConfirmation); err == nil {
		t.Error("a second reset ran")
	}
}

// TestResetDemo: after an exchange was performed, Reset demo restores the reference Company
// (orders, ledger, tokens as at start), declines what still waits, signs the demo account in
// again, and the exchange can be asked for and performed again.
func TestResetDemo(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Demo: true})
	a := f.Fronts().Approvals
	perform := func() {
		t.Helper()
		if _, err := a.StartDemoExchange("api"); err != nil {
			t.Fatal(err)
		}
		items, err := a.List()
		if err != nil || len(items) == 0 || !items[0].Decidable {
			t.Fatalf("List = %+v, %v", items, err)
		}
		it, err := a.Get(items[0].ID) // as the window opens the row
		if err != nil {
			t.Fatal(err)
		}
		if out, err := a.Approve(it.ID, it.Current.Revision, it.Current.Digest); err != nil || out.Status != "done" {
			t.Fatalf("Approve = %+v, %v", out, err)
		}
	}
	perform()
	if n := len(f.Company.Ledger()); n != 1 {
		t.Fatalf("ledger = %d entries", n)
	}
	if _, err := a.StartDemoExchange("mcp"); err != nil { // one left waiting
		t.Fatal(err)
	}
	if err := a.ResetDemo(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Company.Ledger()); n != 0 {
		t.Errorf("the ledger after Reset demo has %d entries", n)
	}
	items, err := a.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Decidable {
			t.Errorf("approval %s still waits after Reset demo", it.ID)
		}
	}
	list, err := f.Fronts().Companies.List("", app.CompaniesPageMax)
	if err != nil || len(list.Companies) != 1 || len(list.Companies[0].Accounts) != 1 || list.Companies[0].Accounts[0].Account != app.DemoAccount ||
		!list.Companies[0].Demo || list.Companies[0].ScopeWords["orders:write"] == "" {
		t.Fatalf("Companies after Reset demo = %+v, %v", list, err)
	}
	perform()
	if l := f.Company.Ledger(); len(l) != 1 || l[0].Account != refcompany.DefaultAccount {
		t.Errorf("after Reset demo the exchange performed %+v", l)
	}
}

// taskbar records what the Host asks of the desktop: notifications, the count on the taskbar
// entry and the window's urgency hint.
type taskbar struct {
	mu     sync.Mutex
	notes  []string
	counts []int
	urgent []bool
}

func (b *taskbar) Notify(title, _ string) {
	b.mu.Lock()
	b.notes = append(b.notes, title)
	b.mu.Unlock()
}
func (b *taskbar) Count(n int)       { b.mu.Lock(); b.counts = append(b.counts, n); b.mu.Unlock() }
func (b *taskbar) setUrgent(on bool) { b.mu.Lock(); b.urgent = append(b.urgent, on); b.mu.Unlock() }

func (b *taskbar) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("notes %q, counts %v, urgent %v", b.notes, b.counts, b.urgent)
}

// TestAttentionWithoutTheFocus: an approval that arrives while the window is not focused asks
// for attention without taking the focus (the urgency hint and a notification, never a raise:
// the Host has no way to raise the window) and counts on the taskbar entry; coming back to the
// window clears the hint; while the window is focused nothing asks for attention.
func TestAttentionWithoutTheFocus(t *testing.T) {
	bar := &taskbar{}
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) { c.Notifier = bar }})
	f.Host.SetUrgency(bar.setUrgent)
	f.SignIn(t, "personal", "orders:read", "orders:write")
	co := f.Discover(t)
	shell := f.Fronts().Shell

	shell.WindowFocus(false)
	apptest.RequestExchange(t, f, co, "personal")
	waitUntil(t, "the attention request", func() bool {
		s := bar.String()
		return strings.Contains(s, `notes ["Approval needed: `+co.Organization.Name+`"]`) && strings.Contains(s, "counts [1]") && strings.Contains(s, "urgent [true]")
	})
	shell.WindowFocus(true)
	if s := bar.String(); !strings.Contains(s, "urgent [true false]") {
		t.Errorf("coming back to the window did not clear the urgency hint: %s", s)
	}

	// Focused: new terms change the count only.
	apptest.RequestExchange(t, f, co, "personal")
	time.Sleep(300 * time.Millisecond)
	if s := bar.String(); strings.Count(s, "Approval needed") != 1 || strings.Contains(s, "New terms") || !strings.Contains(s, "urgent [true false]") {
		t.Errorf("while the window has the focus: %s", s)
	}
}

// TestClosingEndsTheModelsWaits: when the window closes (Host.Close) while the model waits for
// the user's decision, the wait answers at once that the window was closed and nothing was
// approved, and the approval stays undecided.
func TestClosingEndsTheModelsWaits(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.SignIn(t, "personal", "orders:read", "orders:write")
	co := f.Discover(t)
	out := apptest.RequestExchange(t, f, co, "personal")
	// The wait's first progress notification says it is under way.
	waiting := make(chan struct{}, 1)
	cs := apptest.ModelWith(t, f.Host, "waiter", &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case waiting <- struct{}{}:
			default:
			}
		},
	})
	type result struct {
		status string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		params := &mcp.CallToolParams{Name: modelapi.ToolWaitForApproval,
			Arguments: map[string]any{"approval_id": out.ApprovalID, "timeout_seconds": 120}}
		params.SetProgressToken("wait")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			done <- result{err: err}
			return
		}
		sc, _ := res.StructuredContent.(map[string]any)
		st, _ := sc["status"].(string)
		done <- result{status: st}
	}()
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("the wait ended before the window closed: %q, %v", r.status, r.err)
	}
	start := time.Now()
	if err := f.Host.CloseWithin(app.ShutdownGrace); err != nil {
		t.Errorf("Close: %v", err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.status != modelapi.StatusWindowClosed {
			t.Fatalf("the model's wait ended with %q, %v; want %q", r.status, r.err, modelapi.StatusWindowClosed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the model's wait did not end when the window closed")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("closing with a model waiting took %s", d)
	}
}

package app

// The window's services over the Host, and the work the Host does at start (recovering
// approvals whose outcome is unknown, resuming conversations) and at shutdown.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// Fronts are the services bound to the window: views over the Host that convert, call and
// convert. Every exported method of each is callable from the window.
type Fronts struct {
	Shell         *Shell
	Approvals     *Approvals
	SignIn        *SignIn
	Companies     *Companies
	Conversations *Conversations
	Browser       *Browser
	Activity      *Activity
}

// list is the bound services, in the order Wails binds them.
func (f Fronts) list() []any {
	return []any{f.Shell, f.Approvals, f.SignIn, f.Companies, f.Conversations, f.Browser, f.Activity}
}

// BindingTypes lists a zero value of each service bound to the window, for the Wails binding
// generator (which only reads the types): the same list [Host.Bindings] returns.
func BindingTypes() []any {
	return Fronts{&Shell{}, &Approvals{}, &SignIn{}, &Companies{}, &Conversations{}, &Browser{}, &Activity{}}.list()
}

// Fronts are the window's services over this Host.
func (h *Host) Fronts() Fronts { return h.fronts }

func (h *Host) openFronts(context.Context) error {
	ctx := h.life.Context()
	if h.cfg.Notifier != nil {
		h.notifier = h.cfg.Notifier
	} else {
		n := NewDesktopNotifier(DesktopNotifierConfig{Log: h.log}, h.getenv)
		h.notifier = n
		h.onClose("desktop notifications", func(context.Context) error { n.Close(); return nil })
	}

	acfg := ApprovalsConfig{Context: ctx, Emitter: h.relay, Log: h.log, Now: h.now, Notifier: h.notifier}
	if h.problem != nil {
		acfg.Problem = h.problem.Text
	} else {
		acfg.Queue = h.queue
	}
	if h.demo != nil && h.queue != nil {
		acfg.Demo, acfg.DemoCompany = h.demoRequest, h.demo.info.Name
	}
	f := &h.fronts
	f.Approvals = NewApprovals(acfg)
	h.approvalsChanged = ApprovalChanges(f.Approvals)

	shell := ShellConfig{Version: h.cfg.Version, Paths: h.cfg.Paths, Keyring: h.keyring, Counter: ApprovalsCounter(f.Approvals),
		Emitter: h.relay, Log: h.log}
	if h.demo != nil {
		shell.Demo = h.demo.info.Name + " (" + h.demo.info.Identifier + ")"
		h.status.Set("Demo: connected to the reference Company " + h.demo.info.Name + ".")
	}
	if h.problem != nil {
		h.status.Set(h.problem.Text)
	}
	f.Shell = NewShell(shell, h.status)

	if h.engine != nil {
		opener := h.cfg.Opener
		if opener == nil {
			opener = OpenerFunc(OpenInBrowser)
		}
		dir := directory{h}
		f.SignIn = NewSignIn(SignInConfig{Companies: dir, OAuth: h.oauth, Requests: h.signIns, Opener: opener,
			Logo: NewLogoFetcher(h.engine.Transport().NoRedirectClient()), Emitter: h.relay, Context: ctx, Go: h.life.Go, Now: h.now, Log: h.log})
		f.Companies = NewCompanies(CompaniesConfig{Directory: dir, OAuth: h.oauth, Emitter: h.relay, Context: ctx, Log: h.log,
			ExcludedTasks: h.coverage.ExcludedTasks})
	} else {
		f.SignIn, f.Companies = &SignIn{}, &Companies{}
	}

	ccfg := ConversationsConfig{Context: ctx, Log: h.log, Companies: h.conversationCompanies, Account: h.demoAccount}
	if h.conversations != nil {
		ccfg.Manager = func() (ConversationManager, error) { return h.conversations, nil }
	} else if h.problem != nil {
		p := h.problem
		ccfg.Manager = func() (ConversationManager, error) { return nil, p }
	}
	f.Conversations = NewConversations(ccfg)

	f.Browser, h.modelBrowser = NewBrowser(BrowserConfig{Manager: h.browsers, Engine: h.browserEngine, Emitter: h.relay, Log: h.log, Now: h.now})

	info := ActivityInfo{Socket: h.socket, Listening: h.listener != nil}
	if h.socketErr != nil {
		info.Problem = h.socketErr.Error()
	}
	f.Activity = NewActivity(h.activity, h.relay, info)
	if h.coverage != nil {
		f.Activity.reports = h.coverage.Reports
	}
	return nil
}

// approvalChanged is the queue's OnChange: the window's Approvals service hears every change.
func (h *Host) approvalChanged(ev approvals.Event) {
	if f := h.approvalsChanged; f != nil {
		f(ev)
	}
}

// browserEngine gives the controlled browsers the engine and the account's sign-in state.
func (h *Host) browserEngine() (*engine.Engine, browserjoin.StatusFunc) {
	if h.engine == nil {
		return nil, nil
	}
	return h.engine, browserjoin.OAuthStatus(h.oauth)
}

// startWork starts what runs for the Host's life: approvals whose outcome is unknown are sent
// again with the same approval (Operations 7), messages persisted but not accepted are sent
// again with the same IDs (spec 8.3), and at shutdown the window's streams stop.
func (h *Host) startWork(context.Context) error {
	return h.life.Go("start-up recovery", func(ctx context.Context) {
		if h.queue != nil {
			if err := h.queue.Recover(ctx); err != nil && !errors.Is(err, context.Canceled) {
				h.log.Warn("recovering approvals with an unknown outcome failed; use Check the outcome in the window", "err", err)
			}
			RefreshCount(h.fronts.Approvals)
		}
		if h.conversations != nil {
			h.resumeConversations(ctx)
		}
		close(h.started)
		<-ctx.Done()
		StopConversations(h.fronts.Conversations)
	})
}

// WaitStarted waits until the start-up work has finished: approvals whose outcome was unknown
// were sent again and unsent conversation messages resent (or ctx ended first).
func (h *Host) WaitStarted(ctx context.Context) error {
	select {
	case <-h.started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resumeConversations sends again what was persisted but not accepted, for every Company with
// conversations (spec 8.3). A failure is logged: the messages stay persisted for the next start.
func (h *Host) resumeConversations(ctx context.Context) {
	cos, err := h.state.ListCompanies(ctx)
	if err != nil {
		h.log.Warn("listing Companies to resume conversations failed; unsent messages are sent at the next start", "err", err)
		return
	}
	for _, co := range cos {
		convs, err := h.state.ListConversations(ctx, co.Identifier)
		if err != nil || len(convs) == 0 {
			continue
		}
		if err := h.conversations.Resume(ctx, co.Identifier); err != nil && !errors.Is(err, context.Canceled) {
			h.log.Warn("resuming conversations failed; the unsent messages stay saved and are sent again at the next start", "company", co.Identifier, "err", err)
		}
	}
}

// conversationCompanies lists the discovered Companies that offer conversations (spec 8.1),
// with their verified names.
func (h *Host) conversationCompanies(ctx context.Context) ([]ConversationCompany, error) {
	out := []ConversationCompany{}
	if h.engine == nil {
		return out, nil
	}
	cos, err := h.state.ListCompanies(ctx)
	if err != nil {
		return nil, err
	}
	for _, co := range cos {
		name := co.Domain
		if d, err := h.engine.Company(ctx, co.Identifier); err == nil {
			if _, ok := conversation.Endpoint(d); !ok {
				continue
			}
			if d.Organization.Name != "" {
				name = d.Organization.Name
			}
		}
		out = append(out, ConversationCompany{Identifier: co.Identifier, Name: name})
	}
	return out, nil
}

// directory is the Companies and Sign-in screens' view of the Host: discovery through the
// engine, the list from the state database, and forgetting a Company in both stores.
type directory struct{ h *Host }

func (d directory) Company(ctx context.Context, id string) (*discovery.Company, error) {
	return d.h.engine.Company(ctx, id)
}

func (d directory) Discover(ctx context.Context, domain string) (*discovery.Company, error) {
	return d.h.engine.Discover(ctx, domain)
}

func (d directory) Known(ctx context.Context) ([]string, error) {
	cs, err := d.h.state.ListCompanies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.Identifier)
	}
	return out, nil
}

// Forget deletes the Company's secret bundles (every account, and the signed-out identity with
// its User ID) and then its state records.
func (d directory) Forget(ctx context.Context, id string) error {
	pairs, err := d.h.secrets.Companies(ctx)
	if err != nil {
		return fmt.Errorf("listing the keyring items failed: %w", err)
	}
	for _, p := range pairs {
		if p[0] != id {
			continue
		}
		if err := d.h.secrets.DeleteCompany(ctx, p[0], p[1]); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleting the keyring item of account %q failed: %w", p[1], err)
		}
	}
	return d.h.state.ForgetCompany(ctx, id)
}

var _ CompanyDirectory = directory{}

// isClosed reports an error of a listener that is already closed.
func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

package app

// The window's services over the Host, and the work the Host does at start (recovering
// approvals whose outcome is unknown, resuming conversations) and at shutdown.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// Fronts are the services bound to the window: views over the Host. Each holds only the Host;
// each exported method converts its arguments, calls the Host or one of its parts, and
// converts the result. Every exported method of each is callable from the window.
type Fronts struct {
	Shell         *Shell
	Approvals     *Approvals
	SignIn        *SignIn
	Companies     *Companies
	Conversations *Conversations
	Browser       *Browser
	Activity      *Activity
	Inspector     *Inspector
	Settings      *Settings
}

// list is the bound services, in the order Wails binds them.
func (f Fronts) list() []any {
	return []any{f.Shell, f.Approvals, f.SignIn, f.Companies, f.Conversations, f.Browser, f.Activity, f.Inspector, f.Settings}
}

// BindingTypes lists a zero value of each service bound to the window, for the Wails binding
// generator (which only reads the types): the same list [Host.Bindings] returns. A zero-value
// service belongs to no Host and answers every call with an error.
func BindingTypes() []any {
	return Fronts{&Shell{}, &Approvals{}, &SignIn{}, &Companies{}, &Conversations{}, &Browser{}, &Activity{}, &Inspector{}, &Settings{}}.list()
}

// Fronts are the window's services over this Host.
func (h *Host) Fronts() Fronts { return h.fronts }

func (h *Host) openFronts(ctx context.Context) error {
	if h.cfg.Notifier != nil {
		h.notifier = h.cfg.Notifier
	} else {
		n := NewDesktopNotifier(DesktopNotifierConfig{Log: h.log}, h.getenv)
		h.notifier = n
		h.onClose("desktop notifications", func(context.Context) error { n.Close(); return nil })
	}
	h.opener = h.cfg.Opener
	if h.opener == nil && h.demo != nil {
		h.opener = h.demoOpener()
	}
	if h.opener == nil {
		h.opener = OpenerFunc(OpenInBrowser)
	}
	h.loadAttention(ctx)
	if h.engine != nil {
		h.logo = NewLogoFetcher(h.engine.Transport().NoRedirectClient())
	}
	h.signIn.flows = map[string]*runningSignIn{}
	// A Problem is explained by the window's first-run screen (Shell.Info), not the status line.
	switch {
	case h.demo != nil && h.problem == nil:
		h.status.Set(h.demo.status())
	}
	h.fronts = Fronts{Shell: &Shell{h}, Approvals: &Approvals{h}, SignIn: &SignIn{h}, Companies: &Companies{h},
		Conversations: &Conversations{h}, Browser: &Browser{h}, Activity: &Activity{h}, Inspector: &Inspector{h}, Settings: &Settings{h}}
	return nil
}

// browserEngine gives the controlled browsers the engine and the account's sign-in state.
func (h *Host) browserEngine() (*engine.Engine, browserjoin.StatusFunc) {
	if h.engine == nil {
		return nil, nil
	}
	return h.engine, browserjoin.OAuthStatus(h.oauth)
}

// startWork starts what runs for the Host's life: the exchange log is pruned to its window,
// approvals whose outcome is unknown are sent again with the same approval (Operations 7),
// messages persisted but not accepted are sent again with the same IDs (spec 8.3), and at
// shutdown the window's streams stop.
func (h *Host) startWork(context.Context) error {
	// The exchange log back within its window (30 days, 200 MiB), beside the window's first
	// reads and the recovery below: after weeks unused this deletes many rows, in bounded steps
	// (vault.State.PruneExchanges), so no call waits for the whole of it.
	if err := h.life.Go("exchange log catch-up", func(ctx context.Context) {
		defer close(h.caughtUp)
		if h.state == nil {
			return
		}
		if n, err := h.state.PruneExchanges(ctx); err != nil && !errors.Is(err, context.Canceled) {
			h.log.Warn("keeping the exchange log within its window failed; it is tried again as exchanges are recorded", "err", err)
		} else if n > 0 {
			h.log.Info("the exchange log was kept within its window", "removed", n)
		}
	}); err != nil {
		return err
	}
	return h.life.Go("start-up recovery", func(ctx context.Context) {
		if h.queue != nil {
			if err := h.queue.Recover(ctx); err != nil && !errors.Is(err, context.Canceled) {
				h.log.Warn("recovering approvals with an unknown outcome failed; use Check the outcome in the window", "err", err)
			}
			h.countApprovals(ctx)
		}
		if h.conversations != nil {
			h.resumeConversations(ctx)
		}
		close(h.started)
		<-ctx.Done()
		if h.followers != nil {
			h.followers.Stop()
		}
	})
}

// WaitCaughtUp waits until the start-up catch-up of the exchange log to its window has finished
// (or ctx ended first). Nothing else waits for it: it runs beside the window and every call.
func (h *Host) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-h.caughtUp:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
	cos, err := h.state.ConversationCompanies(ctx)
	if err != nil {
		h.log.Warn("listing Companies to resume conversations failed; unsent messages are sent at the next start", "err", err)
		return
	}
	for _, co := range cos {
		if err := h.conversations.Resume(ctx, co); err != nil && !errors.Is(err, context.Canceled) {
			h.log.Warn("resuming conversations failed; the unsent messages stay saved and are sent again at the next start", "company", co, "err", err)
		}
	}
}

// conversationCompanies lists the Companies with a Company Agent (spec 8.1) from the state
// database's list columns, in name order; a Company stored before those columns is read whole.
func (h *Host) conversationCompanies(ctx context.Context) ([]ConversationCompany, error) {
	out := []ConversationCompany{}
	if h.engine == nil {
		return out, nil
	}
	q := vault.CompanyQuery{Talk: true, Limit: CompaniesPageMax}
	for {
		refs, err := h.state.ListCompanyRefs(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			name := r.Name
			if name == "" { // stored before the list columns: its document says
				d, err := h.engine.Company(ctx, r.Identifier)
				if err != nil {
					continue
				}
				if _, ok := d.AgentEndpoint(); !ok {
					continue
				}
				if name = d.Organization.Name; name == "" {
					name = r.Domain
				}
			}
			out = append(out, ConversationCompany{Identifier: r.Identifier, Name: name})
		}
		if len(refs) < q.Limit {
			return out, nil
		}
		q.AfterName, q.AfterID = refs[len(refs)-1].Name, refs[len(refs)-1].Identifier
	}
}

// ForgetCompany signs every account out of the Company (revoking its refresh tokens, spec 4.6,
// 5.5), then deletes what Poppydesk keeps about it: its secret bundles (every account, and the
// signed-out identity with its User ID) and its state records. When a sign-out fails nothing
// is deleted, so the user can try again. A later discovery of its domain starts afresh, with
// new User IDs (spec 5.1).
func (h *Host) ForgetCompany(ctx context.Context, identifier string) error {
	if err := h.refusal(); err != nil {
		return err
	}
	co, err := h.engine.Company(ctx, identifier)
	if err != nil {
		return fmt.Errorf("Poppydesk does not know this Company: %w", err)
	}
	name := co.Organization.Name
	if co.Issuer != "" {
		accts, err := h.oauth.Accounts(ctx, co.Identifier)
		if err != nil {
			return fmt.Errorf("reading the accounts at %s failed, so nothing was forgotten: %w", name, err)
		}
		for _, a := range accts {
			if err := h.oauth.SignOut(ctx, co, a.Account); err != nil {
				return fmt.Errorf("signing out of %s (%s) failed, so nothing was forgotten; try again: %w", name, a.Account, err)
			}
		}
	}
	pairs, err := h.secrets.Companies(ctx)
	if err != nil {
		return fmt.Errorf("forgetting %s failed: listing the keyring items failed: %w", name, err)
	}
	for _, p := range pairs {
		if p[0] != co.Identifier {
			continue
		}
		if err := h.secrets.DeleteCompany(ctx, p[0], p[1]); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("forgetting %s failed: deleting the keyring item of account %q failed: %w", name, p[1], err)
		}
	}
	if err := h.state.ForgetCompany(ctx, co.Identifier); err != nil {
		return fmt.Errorf("forgetting %s failed: %w", name, err)
	}
	h.log.Info("Company forgotten", "company", co.Identifier)
	return nil
}

// isClosed reports an error of a listener that is already closed.
func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

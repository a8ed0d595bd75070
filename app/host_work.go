package app

// What the window's services read that the Host builds last, and the work the Host does at start
// (recovering approvals whose outcome is unknown, resuming conversations) and at shutdown.

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/engine"
)

// openWindowParts builds what the window's services read and what lets the Host reach the user:
// the desktop notifications and their setting, the opener of the user's browser, the logo
// fetcher, the sign-in flows, and the demo's status line.
func (h *Host) openWindowParts(ctx context.Context) error {
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
		h.logo = newLogoFetcher(h.engine.Transport().NoRedirectClient())
	}
	h.signIn.flows = map[string]*runningSignIn{}
	// A Problem is explained by the window's first-run screen (Shell.Info), not the status line.
	switch {
	case h.demo != nil && h.problem == nil:
		h.status.Set(h.demo.status())
	}
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
	// The exchange log back within its window (30 days, 200 MiB), beside the window and the
	// recovery below: after weeks unused this deletes many rows, so it begins once the window's
	// first screen has had its start (CatchUpDelay) and goes in bounded steps
	// (vault.State.PruneExchangesStep), pausing after each for as long as it took, so that a
	// call or a screen waits at most one step for it (BenchmarkCallsDuringCatchUp) and it takes
	// at most half of a core.
	if err := h.life.Go("exchange log catch-up", func(ctx context.Context) {
		defer close(h.caughtUp)
		if h.state != nil {
			h.catchUp(ctx)
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

// CatchUpDelay is how long after its start the Host begins the exchange log's catch-up: the
// window's first screen comes before it.
const CatchUpDelay = 2 * time.Second

// catchUp prunes the exchange log to its window in paced steps, until nothing is left or ctx ends.
func (h *Host) catchUp(ctx context.Context) {
	var removed int64
	defer func() {
		if removed > 0 {
			h.log.Info("the exchange log was kept within its window", "removed", removed)
		}
	}()
	pause := CatchUpDelay
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		began := time.Now()
		n, more, err := h.state.PruneExchangesStep(ctx)
		removed += n
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				h.log.Warn("keeping the exchange log within its window failed; it is tried again as exchanges are recorded", "err", err)
			}
			return
		}
		if !more {
			return
		}
		pause = time.Since(began)
	}
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

// isClosed reports an error of a listener that is already closed.
func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

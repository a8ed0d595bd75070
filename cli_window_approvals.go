package main

// The window's approvals (issue 6): a runtime hook that opens the window's engine (the state
// database in the data directory and the OS keyring), builds the approval queue
// (agentcore/approvals) over it, recovers approvals whose outcome is unknown (Operations 7),
// binds app.Approvals, and closes everything on shutdown. In demo mode the engine comes from
// startDemo (cli_demo.go), configured for the reference Company.
//
// The engine it opens is shared with the other screens of the window: windowSignInDeps (the
// Sign-in and Companies screens) and windowApprovalQueue (the model's interface) read it.
//
// If the keyring is unavailable the window still opens: the status line and the Approvals
// section say so and how to start a Secret Service.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

// stateFileName is the window's state database in the data directory.
const stateFileName = "poppydesk.sqlite"

// settingClientID is the state setting holding the Personal Agent's published client_id
// (spec 4.1), e.g. https://agent.example/agent.json. Without it the window has no identity to
// sign Sessions with, and approvals say so.
const settingClientID = "identity.client_id"

// windowSecretsOverride, when set (tests of package main), replaces the OS keyring of the
// window's engine.
var windowSecretsOverride func(ctx context.Context) (store.Secrets, error)

// windowEngine is the engine the window's services share.
type windowEngine struct {
	eng     *engine.Engine
	st      *vault.State
	secrets store.Secrets
	queue   *approvals.Queue
	// close closes the engine and the database (the queue is closed before it).
	close func(context.Context) error
	// demo is set in demo mode: the reference Company and the account to act for.
	demo *demoRuntime
}

var windowEngines sync.Map // *windowRuntime → *windowEngine

// windowEngineOf returns the window's engine, or nil when it could not be opened.
func windowEngineOf(rt *windowRuntime) *windowEngine {
	if v, ok := windowEngines.Load(rt); ok {
		return v.(*windowEngine)
	}
	return nil
}

// windowApprovalQueue returns the window's approval queue (nil without one): the model's
// interface (agentcore/modelapi) calls its request side.
func windowApprovalQueue(rt *windowRuntime) *approvals.Queue {
	if w := windowEngineOf(rt); w != nil {
		return w.queue
	}
	return nil
}

func init() {
	runtimeHooks = append(runtimeHooks, approvalsHook)
	if windowSignInDeps == nil {
		windowSignInDeps = func(rt *windowRuntime) (signInDeps, bool) {
			w := windowEngineOf(rt)
			if w == nil {
				return signInDeps{}, false
			}
			return signInDeps{Engine: w.eng, State: w.st, Secrets: w.secrets}, true
		}
	}
}

// keyringHelp is what the window says when no Secret Service answers.
const keyringHelp = "Poppydesk keeps its keys and sign-ins in the system keyring, and none is reachable, so approvals are off. " +
	"Start a Secret Service (for example GNOME Keyring or KeePassXC with Secret Service integration), unlock it, and restart Poppydesk."

func approvalsHook(ctx context.Context, rt *windowRuntime, o *windowOptions) error {
	if bindingsBuild {
		rt.services = append(rt.services, &app.Approvals{})
		return nil
	}
	w, problem, err := openWindowEngine(ctx, rt, o)
	if err != nil {
		return err
	}
	cfg := app.ApprovalsConfig{Context: rt.lifecycle.Context(), Emitter: rt.relay, Log: rt.log, Problem: problem,
		Notifier: app.NewDesktopNotifier(app.DesktopNotifierConfig{Log: rt.log}, os.Getenv)}
	notifier := cfg.Notifier.(*app.DesktopNotifier)
	var onChange atomic.Pointer[func(approvals.Event)]
	if w != nil {
		q, err := approvals.New(approvals.Config{Engine: w.eng, Store: w.st, Logger: rt.log, Conversations: windowConversationSender{rt},
			OnChange: func(ev approvals.Event) {
				if f := onChange.Load(); f != nil {
					(*f)(ev)
				}
			}})
		if err != nil {
			_ = w.close(context.Background())
			notifier.Close()
			return fmt.Errorf("starting the approval queue failed: %w", err)
		}
		w.queue = q
		cfg.Queue = q
		if w.demo != nil {
			cfg.Demo = w.demo.request(q)
			cfg.DemoCompany = w.demo.info.Name
		}
		windowEngines.Store(rt, w)
	}
	svc := app.NewApprovals(cfg)
	h := app.ApprovalChanges(svc)
	onChange.Store(&h)
	replaceShell(rt, app.ApprovalsCounter(svc), w)
	rt.services = append(rt.services, svc)
	if problem != "" {
		rt.status.Set(problem)
	}

	err = rt.lifecycle.Go("approvals", func(lctx context.Context) {
		if w != nil {
			if err := w.queue.Recover(lctx); err != nil && !errors.Is(err, context.Canceled) {
				rt.log.Warn("recovering approvals with an unknown outcome failed; use Check the outcome in the window", "err", err)
			}
			app.RefreshCount(svc)
		}
		<-lctx.Done()
		notifier.Close()
		if w == nil {
			return
		}
		windowEngines.Delete(rt)
		if err := w.queue.Close(); err != nil {
			rt.log.Warn("closing the approval queue failed", "err", err)
		}
		cctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := w.close(cctx); err != nil {
			rt.log.Warn("closing the engine failed", "err", err)
		}
	})
	if err != nil {
		notifier.Close()
		if w != nil {
			_ = w.queue.Close()
			_ = w.close(context.Background())
		}
		return err
	}
	return nil
}

// replaceShell rebuilds the window's Shell with the Approvals badge counter and the keyring's
// real status (the Shell's configuration is fixed at construction; prepareRuntime builds it
// before the hooks run).
func replaceShell(rt *windowRuntime, counter app.Counter, w *windowEngine) {
	keyring := "unavailable"
	if w != nil {
		keyring = "connected"
		if w.demo != nil {
			keyring = "demo (in memory)"
		}
	}
	cfg := app.ShellConfig{Version: version, Paths: rt.paths, Keyring: keyring, Counter: counter, Emitter: rt.relay, Log: rt.log}
	if rt.demoCompany != nil {
		cfg.Demo = rt.demoCompany.Name + " (" + rt.demoCompany.Identifier + ")"
	}
	shell := app.NewShell(cfg, rt.status)
	for i, s := range rt.services {
		if s == rt.shell {
			rt.services[i] = shell
		}
	}
	rt.shell = shell
}

// openWindowEngine opens the engine the window uses. It returns (nil, problem, nil) when the
// window must open without one (no keyring, no identity), and an error only for failures that
// should stop the start.
func openWindowEngine(ctx context.Context, rt *windowRuntime, o *windowOptions) (*windowEngine, string, error) {
	if o.demo {
		d := takeDemo()
		if d == nil {
			return nil, "Demo: the reference Company did not start, so there is nothing to approve.", nil
		}
		d.setLogger(rt.log)
		return &windowEngine{eng: d.eng, st: d.st, secrets: d.secrets, close: d.closeEngine, demo: d}, "", nil
	}
	var secrets store.Secrets
	var err error
	if windowSecretsOverride != nil {
		secrets, err = windowSecretsOverride(ctx)
	} else {
		secrets, err = openSecrets(ctx)
	}
	if err != nil {
		rt.log.Warn("the system keyring is unavailable; approvals are off", "err", err)
		return nil, keyringHelp, nil
	}
	statePath := filepath.Join(rt.paths.Data, stateFileName)
	st, err := vault.OpenState(ctx, statePath, vault.StateOptions{Logger: rt.log})
	if err != nil {
		return nil, "", fmt.Errorf("opening the state database %s failed: %w; check the data folder's permissions", statePath, err)
	}
	clientID, err := st.GetSetting(ctx, settingClientID)
	st.Close()
	if err != nil || clientID == "" {
		return nil, "Poppydesk has no published identity yet (client_id, spec 4.1), so it cannot act at Companies and approvals are off. Try `poppydesk demo` to see the reference Company.", nil
	}
	eng, st, closeAll, err := openEngine(ctx, statePath, engine.Config{Identity: identity.Config{ClientID: clientID, ClientName: "Poppydesk"},
		Secrets: secrets, Logger: rt.log})
	if err != nil {
		return nil, "", fmt.Errorf("starting the engine failed: %w", err)
	}
	return &windowEngine{eng: eng, st: st, secrets: secrets, close: closeAll}, "", nil
}

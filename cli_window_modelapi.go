package main

// The model interface in the window: a runtime hook that serves agentcore/modelapi's MCP server
// on the user's Unix socket while the window runs, and binds app.Activity (the Inspector's
// "what your model asked") to the window. `poppydesk mcp` relays MCP clients to this socket.

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
)

// modelAPICore gives the model interface the window's own engine, approval queue and keyring,
// so the approvals the model causes are the ones the window shows. By default it reads the
// engine the approvals hook opened (windowEngineOf); it is read at each request, so hook order
// does not matter. While it reports false (no keyring, no identity), every tool that needs the
// engine answers that the engine is not running yet.
var modelAPICore func(rt *windowRuntime) (e *engine.Engine, q *approvals.Queue, secrets store.Secrets, ok bool)

// windowSignInRequests holds the model's sign-in requests for the window's sign-in screen (set
// by the hook below; nil before the window starts).
var windowSignInRequests *modelapi.MemorySignInRequests

// listeningSocket is the window's model socket while it listens ("" otherwise).
var listeningSocket atomic.Pointer[string]

// windowModelSocket returns the socket the window's model interface listens on, "" when it does
// not listen (the demo's "Run the example agent" connects to it).
func windowModelSocket() string {
	if p := listeningSocket.Load(); p != nil {
		return *p
	}
	return ""
}

// EventSignInRequests says the model's sign-in requests changed.
const EventSignInRequests = "signin:requests"

func init() {
	runtimeHooks = append(runtimeHooks, startModelAPI)
	if modelAPICore == nil {
		// The window's engine and queue, opened by the approvals hook (cli_window_approvals.go).
		modelAPICore = func(rt *windowRuntime) (*engine.Engine, *approvals.Queue, store.Secrets, bool) {
			w := windowEngineOf(rt)
			if w == nil || w.eng == nil || w.queue == nil || w.secrets == nil {
				return nil, nil, nil, false
			}
			return w.eng, w.queue, w.secrets, true
		}
	}
}

func startModelAPI(ctx context.Context, rt *windowRuntime, o *windowOptions) error {
	ring := modelapi.NewActivity(0)
	if bindingsBuild {
		rt.services = append(rt.services, app.NewActivity(ring, nil, app.ActivityInfo{}))
		return nil
	}
	signins := modelapi.NewMemorySignInRequests(func() { rt.relay.Emit(EventSignInRequests) })
	windowSignInRequests = signins
	srv, err := modelapi.NewServer(modelapi.Deps{Actions: &windowActions{rt: rt}, SignIns: signins, Activity: ring,
		Logger: rt.log, Version: version})
	if err != nil {
		return err
	}
	socket := modelapi.SocketPath(os.Getenv, rt.paths.Data)
	info := app.ActivityInfo{Socket: socket}
	ln, err := modelapi.Listen(rt.lifecycle.Context(), socket)
	if err != nil {
		// The window still opens: the model interface is one feature, and the Inspector says
		// why it is off.
		rt.log.Warn("the model interface could not start", "socket", socket, "err", err)
		info.Problem = err.Error()
	} else {
		info.Listening = true
		listeningSocket.Store(&socket)
		if err := rt.lifecycle.Go("model interface (MCP on "+socket+")", func(ctx context.Context) {
			defer listeningSocket.CompareAndSwap(&socket, nil)
			if err := modelapi.Serve(ctx, ln, srv, rt.log); err != nil {
				rt.log.Warn("the model interface stopped", "err", err)
			}
		}); err != nil {
			listeningSocket.CompareAndSwap(&socket, nil)
			ln.Close()
			return err
		}
		rt.log.Info("model interface listening", "socket", socket)
	}
	rt.services = append(rt.services, app.NewActivity(ring, rt.relay, info))
	return nil
}

// errEngineNotRunning is what the model hears while the window has no engine.
var errEngineNotRunning = errors.New("Poppydesk's engine is not running in this window (its Approvals section says why, e.g. no keyring or no identity yet), so nothing was done; tell the user")

// windowActions resolves the window's engine and queue at each request (modelAPICore).
type windowActions struct {
	rt *windowRuntime

	mu   sync.Mutex
	impl *modelapi.EngineActions
	e    *engine.Engine
	q    *approvals.Queue
}

func (w *windowActions) get() (modelapi.Actions, error) {
	if modelAPICore == nil {
		return nil, errEngineNotRunning
	}
	e, q, secrets, ok := modelAPICore(w.rt)
	if !ok || e == nil || q == nil || secrets == nil {
		return nil, errEngineNotRunning
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.impl == nil || w.e != e || w.q != q {
		impl, err := modelapi.NewEngineActions(e, q, secrets)
		if err != nil {
			return nil, err
		}
		w.impl, w.e, w.q = impl, e, q
	}
	return w.impl, nil
}

func (w *windowActions) Discover(ctx context.Context, domain string) (*discovery.Company, error) {
	a, err := w.get()
	if err != nil {
		return nil, err
	}
	return a.Discover(ctx, domain)
}

func (w *windowActions) Company(ctx context.Context, ref string) (*discovery.Company, error) {
	a, err := w.get()
	if err != nil {
		return nil, err
	}
	return a.Company(ctx, ref)
}

func (w *windowActions) Accounts(ctx context.Context, company string) ([]string, error) {
	a, err := w.get()
	if err != nil {
		return nil, err
	}
	return a.Accounts(ctx, company)
}

func (w *windowActions) Operations(ctx context.Context, company string, api discovery.API) (*apis.Description, error) {
	a, err := w.get()
	if err != nil {
		return nil, err
	}
	return a.Operations(ctx, company, api)
}

func (w *windowActions) Tools(ctx context.Context, company, account string, server discovery.API) ([]apis.Tool, error) {
	a, err := w.get()
	if err != nil {
		return nil, err
	}
	return a.Tools(ctx, company, account, server)
}

func (w *windowActions) CallAPI(ctx context.Context, c modelapi.APICall) (*modelapi.Outcome, error) {
	a, err := w.get()
	if err != nil {
		return nil, err
	}
	return a.CallAPI(ctx, c)
}

func (w *windowActions) CallTool(ctx context.Context, c modelapi.ToolCall) (*modelapi.Outcome, error) {
	a, err := w.get()
	if err != nil {
		return nil, err
	}
	return a.CallTool(ctx, c)
}

func (w *windowActions) Approval(ctx context.Context, id string) (*modelapi.ApprovalView, error) {
	a, err := w.get()
	if err != nil {
		return nil, err
	}
	return a.Approval(ctx, id)
}

func (w *windowActions) Wait(ctx context.Context, id string, timeout time.Duration) (*modelapi.Outcome, error) {
	a, err := w.get()
	if err != nil {
		return nil, err
	}
	return a.Wait(ctx, id, timeout)
}

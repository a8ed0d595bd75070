package app

// The model's MCP server over the Host (agentcore/modelapi): the same engine, approval queue,
// conversations and controlled browsers the window shows, so what the model asks for is what
// the window decides.

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/modelapi/endpoint"
)

// EventActivity says the model's activity changed; the window reads [Host.Activity] again.
const EventActivity = "activity:changed"

// Activity is the ring of the model's requests (tool, Company, status; no arguments), which the
// Inspector lists; nil for a nil Host.
func (h *Host) Activity() *modelapi.Activity {
	if h == nil {
		return nil
	}
	return h.activity
}

// ModelSocket is the Unix socket the model's MCP server is meant to listen on (Config.Socket or
// its default; "" with NoSocket), and why it does not listen (nil when it does, or with
// NoSocket). [Host.Socket] is the socket while it listens.
func (h *Host) ModelSocket() (string, error) {
	if h == nil {
		return "", nil
	}
	return h.socket, h.socketErr
}

func (h *Host) openModelAPI(context.Context) error {
	h.activity = modelapi.NewActivity(0)
	h.activity.OnChange(func(modelapi.ActivityEntry) { h.relay.Emit(EventActivity) })
	h.signIns = modelapi.NewMemorySignInRequests(h.signInRequestsChanged)
	srv, err := modelapi.NewServer(modelapi.Deps{Actions: h.modelActions(), SignIns: h.signIns, Activity: h.activity,
		Logger: h.log, Now: h.now, Version: h.cfg.Version})
	if err != nil {
		return err
	}
	// Each tool call's requests name it as their cause in the Inspector, and every call can be
	// ended when the window closes.
	srv.AddReceivingMiddleware(modelCause, h.calls.middleware)
	h.model = srv
	if h.cfg.Socket == NoSocket {
		return nil
	}
	h.socket = h.cfg.Socket
	if h.socket == "" {
		h.socket, err = defaultEndpoint(h.getenv)
	}
	var ln net.Listener
	if err == nil {
		ln, err = modelapi.Listen(h.life.Context(), h.socket)
	}
	if err != nil {
		// The window still opens: the Inspector says why the model's interface is off.
		h.log.Warn("the model interface could not start", "socket", h.socket, "err", err)
		h.socketErr = err
		return nil
	}
	h.listener = ln
	if err := h.life.Go("model interface (MCP on "+h.socket+")", func(ctx context.Context) {
		if err := modelapi.Serve(ctx, ln, srv, h.log); err != nil {
			h.log.Warn("the model interface stopped", "err", err)
		}
	}); err != nil {
		ln.Close()
		h.listener = nil
		return err
	}
	h.onClose("the model's socket", func(context.Context) error {
		if err := ln.Close(); err != nil && !isClosed(err) {
			return err
		}
		return nil
	})
	h.log.Info("model interface listening", "socket", h.socket)
	return nil
}

// defaultEndpoint is the model endpoint for the home folder of the environment.
func defaultEndpoint(getenv func(string) string) (string, error) {
	home, err := endpoint.Home(getenv)
	if err != nil {
		return "", err
	}
	return endpoint.Default(home)
}

// modelCause puts the model's tool call on the context of its handler, so every exchange it
// causes names it (agentcore/inspect).
func modelCause(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ctr, ok := req.(*mcp.CallToolRequest); ok && ctr.Params != nil {
			ctx = inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseModel, Name: ctr.Params.Name})
		}
		return next(ctx, method, req)
	}
}

// modelCalls are the model's tool calls in flight. When the window closes, end cancels them
// with modelapi.ErrWindowClosed, so that a wait_for_approval answers window_closed (the user
// closed the window and nothing was approved) instead of the model's stream just ending, and
// waits until they have returned; modelapi.Serve then writes their answers before it closes the
// sessions.
type modelCalls struct {
	once   sync.Once
	closed chan struct{} // closed by end
	wg     sync.WaitGroup
}

func (m *modelCalls) init() { m.once.Do(func() { m.closed = make(chan struct{}) }) }

func (m *modelCalls) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	m.init()
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if _, ok := req.(*mcp.CallToolRequest); !ok {
			return next(ctx, method, req)
		}
		m.wg.Add(1)
		defer m.wg.Done()
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		go func() {
			select {
			case <-m.closed:
				cancel(modelapi.ErrWindowClosed)
			case <-ctx.Done():
			}
		}()
		return next(ctx, method, req)
	}
}

// end ends every call in flight and waits for them to return, at most until ctx ends. Their
// answers are written before the model's sessions close: modelapi.Serve, stopped with the Host,
// answers every call a session has read before closing it.
func (m *modelCalls) end(ctx context.Context) {
	m.init()
	select {
	case <-m.closed:
	default:
		close(m.closed)
	}
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// modelActions is what the model's tools reach: the engine and queue of this Host, or, when the
// engine does not run, a refusal that says why.
func (h *Host) modelActions() modelapi.Actions {
	if h.problem != nil {
		return unavailable{h.problem}
	}
	a, err := modelapi.NewEngineActions(h.engine, h.queue)
	if err != nil {
		return unavailable{&Problem{Kind: "engine", Text: err.Error()}}
	}
	return hostActions{EngineActions: a.ListFrom(h.state), h: h}
}

// hostActions adds the Host's conversations, controlled browsers and task coverage to the
// engine's actions (modelapi.ConversationProvider, modelapi.BrowserProvider,
// modelapi.CoverageProvider).
type hostActions struct {
	*modelapi.EngineActions
	h *Host
}

func (a hostActions) Conversations() (*conversation.Manager, error) { return a.h.conversations, nil }

func (a hostActions) Browser() modelapi.BrowserActions { return a.h.modelBrowser }

func (a hostActions) Coverage() (*coverage.Service, error) { return a.h.coverage, nil }

// unavailable answers every model request while the engine does not run.
type unavailable struct{ p *Problem }

func (u unavailable) err() error {
	return &modelapi.UnavailableError{Reason: u.p.Text + " Nothing was done; tell the user."}
}

func (u unavailable) Discover(context.Context, string) (*discovery.Company, error) {
	return nil, u.err()
}
func (u unavailable) Company(context.Context, string) (*discovery.Company, error) {
	return nil, u.err()
}
func (u unavailable) Accounts(context.Context, string) ([]string, error) { return nil, u.err() }
func (u unavailable) Operations(context.Context, string, discovery.API) (*apis.Description, error) {
	return nil, u.err()
}
func (u unavailable) Tools(context.Context, string, string, discovery.API) ([]apis.Tool, error) {
	return nil, u.err()
}
func (u unavailable) CallAPI(context.Context, modelapi.APICall) (*modelapi.Outcome, error) {
	return nil, u.err()
}
func (u unavailable) CallTool(context.Context, modelapi.ToolCall) (*modelapi.Outcome, error) {
	return nil, u.err()
}
func (u unavailable) Approval(context.Context, string) (*modelapi.ApprovalView, error) {
	return nil, u.err()
}
func (u unavailable) Wait(context.Context, string, time.Duration) (*modelapi.Outcome, error) {
	return nil, u.err()
}
func (u unavailable) Companies(context.Context) ([]modelapi.KnownCompany, error) {
	return nil, u.err()
}
func (u unavailable) Conversations() (*conversation.Manager, error) { return nil, u.err() }

// Browser refuses the model's browser actions with the Problem's words too.
func (u unavailable) Browser() modelapi.BrowserActions { return u }

func (u unavailable) Browse(context.Context, modelapi.BrowseRequest) (*modelapi.BrowseResult, error) {
	return nil, u.err()
}
func (u unavailable) Coverage() (*coverage.Service, error) { return nil, u.err() }

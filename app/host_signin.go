package app

// The sign-ins the user started in the window (spec 4.2, 4.3; docs/DESIGN.md invariant 1): the Host
// keeps each from its start to its end, waits for its end under its lifecycle, and cancels it
// when the user asks. Only the window's Sign-in service (app/fronts SignIn.StartDirect and
// StartDevice, after the user's click) calls [Host.StartSignIn]. The model's MCP interface
// (agentcore/modelapi) only records requests: agentcore cannot import app (app/deps_test.go),
// so it can reach neither the Host nor the sign-in layer's start.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
)

// Events of the sign-ins.
const (
	// EventSignInFlow carries the [SignInFlow] of a sign-in that ended.
	EventSignInFlow = "signin:flow"
	// EventSignInRequests says the model's sign-in requests changed; the window reads them
	// again ([Host.SignInRequests]).
	EventSignInRequests = "signin:requests"
)

// Kinds of sign-in.
const (
	SignInDirect = "direct" // Direct Sign-In (spec 4.2)
	SignInDevice = "device" // Device Sign-In (spec 4.3)
)

// SignInFlow is one sign-in the user started, as of when it was read. It holds no token,
// authorization code, PKCE verifier or device code: agentcore/oauth keeps them in unexported
// fields.
type SignInFlow struct {
	ID      string
	Kind    string // SignInDirect or SignInDevice
	Company *discovery.Company
	Account string
	// Requested are the scopes asked for: the user's choice with those the account holds
	// (spec 4.7).
	Requested []oauth.ScopeInfo
	// Deadline is when the flow gives up; Remaining is the time left when the record was read
	// (zero once it ended).
	Deadline  time.Time
	Remaining time.Duration
	// URL is Direct Sign-In's authorization URL; OpenErr is why opening it in the user's
	// browser failed.
	URL     string
	OpenErr error
	// Device is Device Sign-In's prompt: the link and the user code.
	Device *oauth.DevicePrompt
	// Done is set once the flow ended: Result on success, Err otherwise (both nil: it ended
	// without an answer).
	Done   bool
	Result *oauth.Result
	Err    error
}

// signInFlows are the sign-ins of this run, by ID.
type signInFlows struct {
	mu     sync.Mutex
	flows  map[string]*runningSignIn
	latest string
}

type runningSignIn struct {
	rec    SignInFlow // guarded by signInFlows.mu
	direct *oauth.DirectFlow
	device *oauth.DeviceFlow
}

// StartSignIn starts a sign-in of kind for req, one at a time: Direct Sign-In opens the
// authorization URL with the Host's opener. Its end is awaited under the Host's lifecycle and
// announced to the window (EventSignInFlow, EventCompaniesChanged). Only the user's gesture in
// the window starts one (docs/DESIGN.md invariant 1).
func (h *Host) StartSignIn(ctx context.Context, kind string, req oauth.SignInRequest) (SignInFlow, error) {
	if err := h.Refusal(); err != nil {
		return SignInFlow{}, err
	}
	co := req.Company
	h.signIn.mu.Lock()
	for _, f := range h.signIn.flows {
		if !f.rec.Done {
			h.signIn.mu.Unlock()
			return SignInFlow{}, fmt.Errorf("a sign-in to %s is already waiting; finish or cancel it first", f.rec.Company.Organization.Name)
		}
	}
	h.signIn.mu.Unlock()

	f := &runningSignIn{rec: SignInFlow{ID: "flow_" + identity.NewID(12), Kind: kind, Company: co, Account: req.Account}}
	switch kind {
	case SignInDirect:
		req.Open = h.opener.OpenURL
		d, err := h.oauth.StartDirect(ctx, req)
		if err != nil {
			return SignInFlow{}, startError(co, err)
		}
		f.direct = d
		f.rec.URL, f.rec.OpenErr, f.rec.Requested, f.rec.Deadline = d.URL, d.OpenErr, d.Requested, d.Deadline
	case SignInDevice:
		d, err := h.oauth.StartDevice(ctx, req)
		if err != nil {
			return SignInFlow{}, startError(co, err)
		}
		f.device = d
		p := d.Prompt
		f.rec.Device, f.rec.Requested, f.rec.Deadline = &p, p.Requested, p.ExpiresAt
	default:
		return SignInFlow{}, fmt.Errorf("unknown kind of sign-in %q", kind)
	}
	h.signIn.mu.Lock()
	h.signIn.flows[f.rec.ID] = f
	h.signIn.latest = f.rec.ID
	rec := h.signInRecord(f)
	h.signIn.mu.Unlock()
	h.log.Info("sign-in started from the window", "kind", kind, "company", co.Identifier, "account", req.Account)
	if err := h.life.Go("sign-in "+rec.ID, func(ctx context.Context) {
		h.waitSignIn(inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseWindow, Name: "SignIn (" + string(kind) + " sign-in)"}), f)
	}); err != nil {
		f.cancel()
		h.signIn.mu.Lock()
		delete(h.signIn.flows, rec.ID)
		h.signIn.mu.Unlock()
		return SignInFlow{}, err
	}
	return rec, nil
}

func startError(co *discovery.Company, err error) error {
	if errors.Is(err, oauth.ErrNotOffered) {
		return fmt.Errorf("%s does not offer this kind of sign-in to Personal Agents: %w", co.Organization.Name, err)
	}
	return fmt.Errorf("the sign-in to %s could not start: %w", co.Organization.Name, err)
}

// waitSignIn blocks until the flow ends (at shutdown a Direct Sign-In's listener is closed),
// records its outcome and tells the window.
func (h *Host) waitSignIn(ctx context.Context, f *runningSignIn) {
	var res *oauth.Result
	var err error
	if f.direct != nil {
		res, err = f.direct.Wait(ctx)
		if ctx.Err() != nil && err == ctx.Err() {
			f.direct.Cancel()
			res, err = f.direct.Wait(context.Background())
		}
	} else {
		res, err = f.device.Wait(ctx)
	}
	h.signIn.mu.Lock()
	f.rec.Done, f.rec.Result, f.rec.Err = true, res, err
	rec := h.signInRecord(f)
	h.signIn.mu.Unlock()
	outcome := "succeeded"
	if err != nil {
		outcome = err.Error()
	}
	h.log.Info("sign-in ended", "flow", rec.ID, "company", rec.Company.Identifier, "outcome", outcome)
	h.relay.Emit(EventSignInFlow, rec)
	h.relay.Emit(EventCompaniesChanged)
}

// signInRecord copies the flow's record with the time left as of now (signIn.mu held).
func (h *Host) signInRecord(f *runningSignIn) SignInFlow {
	rec := f.rec
	rec.Requested = slices.Clone(rec.Requested)
	if rec.Device != nil {
		p := *rec.Device
		p.Requested = slices.Clone(p.Requested)
		rec.Device = &p
	}
	if !rec.Done {
		rec.Remaining = rec.Deadline.Sub(h.now())
		if f.device != nil {
			rec.Remaining = f.device.Remaining()
		}
	}
	return rec
}

// SignIn returns the sign-in id of this run.
func (h *Host) SignIn(id string) (SignInFlow, error) {
	if err := h.Refusal(); err != nil {
		return SignInFlow{}, err
	}
	h.signIn.mu.Lock()
	defer h.signIn.mu.Unlock()
	f := h.signIn.flows[id]
	if f == nil {
		return SignInFlow{}, fmt.Errorf("there is no sign-in %q in this window", id)
	}
	return h.signInRecord(f), nil
}

// LatestSignIn returns the most recent sign-in of this run (false when there is none).
func (h *Host) LatestSignIn() (SignInFlow, bool) {
	if h.Refusal() != nil {
		return SignInFlow{}, false
	}
	h.signIn.mu.Lock()
	defer h.signIn.mu.Unlock()
	f := h.signIn.flows[h.signIn.latest]
	if f == nil {
		return SignInFlow{}, false
	}
	return h.signInRecord(f), true
}

// CancelSignIn stops a waiting sign-in: the loopback listener closes, or polling stops. Its
// end is then recorded as cancelled (oauth.ErrCancelled).
func (h *Host) CancelSignIn(id string) error {
	if err := h.Refusal(); err != nil {
		return err
	}
	h.signIn.mu.Lock()
	f := h.signIn.flows[id]
	h.signIn.mu.Unlock()
	if f == nil {
		return fmt.Errorf("there is no sign-in %q in this window", id)
	}
	f.cancel()
	return nil
}

func (f *runningSignIn) cancel() {
	if f.direct != nil {
		f.direct.Cancel()
	} else {
		f.device.Cancel()
	}
}

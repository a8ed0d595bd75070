package app

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/operations"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/browser"
	"github.com/poppydesk/poppydesk/vault"
)

// StateFile is the name of the state database in the data folder.
const StateFile = "poppydesk.sqlite"

// SettingClientID is the state setting that holds the Personal Agent's published client_id
// (spec 4.1), recorded by `poppydesk identity export`.
const SettingClientID = "identity.client_id"

// ShutdownGrace is how long [Host.Close] waits for in-flight work by default.
const ShutdownGrace = 5 * time.Second

// modelCallsGrace is how long [Host.Close] waits for the model's calls it ended to answer.
const modelCallsGrace = time.Second

// Config is what a [Host] is built from. Every field is a plain value; nothing is registered
// anywhere else.
type Config struct {
	// Version is Poppydesk's version (Settings, the MCP initialize result).
	Version string
	// Paths are the user's folders. The state database, the controlled browsers' profiles and
	// (by default) the model's socket live under Paths.Data.
	Paths Paths
	// Logger receives the Host's logs (nil: discarded). Secrets never reach it.
	Logger *slog.Logger
	// Now is the clock of every part (nil: time.Now).
	Now func() time.Time
	// Getenv reads the environment (nil: os.Getenv): the session bus, the home folder.
	Getenv func(string) string
	// Secrets keeps keys, User IDs and tokens. Nil: the OS keyring (the Secret Service through
	// [vault.Keyring]) under KeyringService.
	Secrets store.Secrets
	// KeyringService is the Secret Service "service" attribute ("": vault.DefaultService).
	KeyringService string
	// ClientID is the Personal Agent's published client_id (spec 4.1). "": the one recorded
	// in the state database under [SettingClientID].
	ClientID string
	// ClientName is the client_name of the published metadata ("": "Poppydesk").
	ClientName string
	// Operator is the base URL of an operator that publishes the identity and signs blindly for
	// this device (spec 10.7); the device's enrollment with it is read from the keyring. "": the
	// one recorded under [SettingOperator], if any, else the self-operated identity (ClientID).
	Operator string
	// DefaultOperator is the base URL of the operator this build names for "Get started"
	// ([Host.GetStarted]): the build setting `-X main.defaultOperator=URL`, which only the
	// composition in app/cli reads and passes here. "": the build names none, and the first run
	// says what each other way to start needs.
	DefaultOperator string
	// Welcome is set when this start follows "Get started" ([RestartReady]): the window says
	// that Poppydesk is ready and shows the operator's name and logo.
	Welcome bool
	// Restart restarts Poppydesk as to, when the window asks ([Host.Restart]): the composition
	// closes this Host and the window, and starts the program again. Nil: this Poppydesk cannot
	// restart itself (the browser-testable bridge, tests), and the window says to quit and
	// start again.
	Restart func(to RestartTo) error
	// Developer names the hosts that may be reached on loopback and the CAs trusted for them
	// only. Zero: production rules (spec 3: HTTPS, public addresses, the system's roots).
	Developer Developer
	// Demo, when set, runs the reference Company on loopback and connects to it: a
	// throwaway state database, secrets in memory, the reference Company's CA trusted for its
	// hosts only.
	Demo *DemoOptions
	// Socket is the Unix socket (Windows: named pipe) of the model's MCP server ("": the
	// default endpoint for $HOME, agentcore/modelapi/endpoint; [NoSocket]: the server runs
	// without a listener).
	Socket string
	// Opener opens URLs in the user's browser (nil: the desktop's opener, xdg-open on Linux).
	Opener URLOpener
	// Notifier shows desktop notifications (nil: the freedesktop notification server on the
	// session bus named by DBUS_SESSION_BUS_ADDRESS).
	Notifier Notifier
	// Browser configures the controlled Chromium (ExecPath, Visible, WindowWidth…); ProfileDir
	// is set per Session under Paths.Data/browser.
	Browser browser.Options
	// Tuning adjusts timings for tests; zero values are the product's defaults.
	Tuning Tuning
}

// NoSocket in Config.Socket runs the model's MCP server without a Unix socket (Host.ModelServer
// still serves connections given to it).
const NoSocket = "-"

// Developer is developer mode: the hosts of Companies under development and the certificate
// authorities trusted for them only.
type Developer struct {
	// Companies are the domains (host[:port]) of the Companies under development, as the
	// developer named them (host_devmode.go); shown in the window's badge.
	Companies []string
	// Hosts are host names (no port) that map to 127.0.0.1; "*.suffix" matches subdomains.
	// Only they may reach loopback ([DeveloperHosts] derives them from Companies).
	Hosts []string
	// RootCAs are trusted for Hosts only, never for another host; CAFile is where they came
	// from ("" when given directly).
	RootCAs []*x509.Certificate
	CAFile  string
	// AgentListen is the loopback address where Poppydesk serves its own client metadata for
	// the developer's Company ("": it serves none, as with the reference Company in tests,
	// which serves it on agent.localhost).
	AgentListen string
}

// On reports whether developer mode names any host.
func (d Developer) On() bool { return len(d.Hosts) > 0 }

// Tuning holds the waits a test shortens. Zero values keep the defaults.
type Tuning struct {
	// Sleep replaces the real waits of the transport (429 Retry-After), the approval queue
	// (backoff, in progress) and the sign-in polling.
	Sleep func(ctx context.Context, d time.Duration) error
	// ApprovalAttempts is how many times an approval is sent before its outcome is unknown.
	ApprovalAttempts int
	// DirectTimeout bounds a Direct Sign-In.
	DirectTimeout time.Duration
	// Observer sees every exchange of the engine's transport (after the exchange log).
	Observer func(transport.Exchange)
	// DocumentTimeout bounds each discovery, metadata and OAuth request (default
	// transport.DefaultDocumentTimeout).
	DocumentTimeout time.Duration
	// ExchangeTimeout bounds each signed exchange with a Company, and each Company MCP tool call
	// (default 30 s, transport.Config.Timeout).
	ExchangeTimeout time.Duration
}

// Problem says why the window's services and the model cannot act: the engine does not run (no
// keyring, a locked keyring, no identity), Reset everything ran, or a service belongs to no Host.
// The window shows Text; the model hears it too. Two Problems are the same error (errors.Is)
// when their Kinds are.
type Problem struct {
	Kind string
	Text string
}

// Kinds of [Problem].
const (
	ProblemNoKeyring     = "no_keyring"
	ProblemKeyringLocked = "keyring_locked"
	ProblemNoIdentity    = "no_identity"
	// ProblemWasReset: Reset everything ran; every service answers it until Poppydesk restarts.
	ProblemWasReset = "was_reset"
	// ProblemNotConnected: a service without a Host (the zero values the Wails binding
	// generator reads) answers it.
	ProblemNotConnected = "not_connected"
)

// problemText is each Problem in the words the window and the model get.
var problemText = map[string]string{
	ProblemNoKeyring: "Poppydesk keeps its keys and sign-ins in the system keyring, and none is reachable, so it cannot act at Companies. " +
		vault.KeyringHelp(runtime.GOOS) + ", then restart Poppydesk.",
	ProblemKeyringLocked: "The system keyring is locked, so Poppydesk cannot read its keys and sign-ins and cannot act at Companies. " +
		"Unlock your login keyring (in GNOME Keyring or KeePassXC on Linux, the login Keychain on macOS), then restart Poppydesk.",
	ProblemNoIdentity: "Poppydesk has no identity yet that Companies can recognise it by, so it cannot act at Companies. " +
		"Open Poppydesk's window and choose how to start: Get started (when this Poppydesk names an operator), another operator, an identity of your own, or the demo.",
	ProblemWasReset:     "Poppydesk was reset: every key, sign-in and record is deleted. Quit Poppydesk and start it again",
	ProblemNotConnected: "this window is not connected to a running Poppydesk, so nothing can be done here; restart Poppydesk and see its log file",
}

func problem(kind string) *Problem { return &Problem{Kind: kind, Text: problemText[kind]} }

// Error is the Problem as an error (what a refused call returns).
func (p *Problem) Error() string { return p.Text }

// Is reports whether target is a Problem of the same Kind.
func (p *Problem) Is(target error) bool {
	t, ok := target.(*Problem)
	return ok && t.Kind == p.Kind
}

// Refusal is why the window's services cannot act: nil when the engine runs; otherwise a
// [Problem] (the engine's, [ProblemWasReset] after Reset everything, [ProblemNotConnected] for a
// nil Host), so that every service answers with its words.
func (h *Host) Refusal() error {
	if h == nil {
		return problem(ProblemNotConnected)
	}
	if h.wasReset.Load() {
		return problem(ProblemWasReset)
	}
	if h.problem != nil {
		return h.problem
	}
	return nil
}

// Host is the running Poppydesk: the state database, the secrets, the identity, the engine with
// its sign-in layer, the approval queue, the conversations, the controlled browsers, the sign-in
// flows, the model's MCP server, and what the window shows of them. [New] builds all of it in
// one place; [Host.Close] closes it in reverse order. The window's services (app/fronts), the
// model's socket and the tests all use this one composition.
type Host struct {
	cfg    Config
	log    *slog.Logger
	now    func() time.Time
	getenv func(string) string
	life   *Lifecycle
	relay  *Relay
	status *StatusLine

	demo     *demoCompany
	stateDir string
	state    *vault.State
	secrets  store.Secrets
	keyring  string // what the window says about the keyring
	problem  *Problem
	clientID string
	device   *store.DeviceBundle      // the operator enrollment in use (nil: self-operated)
	remote   *identity.RemoteOperator // the operator's device side (nil: self-operated)

	engine *engine.Engine
	oauth  *oauth.Client
	// identifiers are the values seen in Companies' responses, kept out of feedback reports.
	identifiers   *coverage.Seen
	coverage      *coverage.Service
	excluded      excludedTasksReads // the Companies screen's background reads (spec 9.1)
	queue         *approvals.Queue
	conversations *conversation.Manager
	browsers      *browser.Manager
	signIns       *modelapi.MemorySignInRequests
	activity      *modelapi.Activity
	model         *mcp.Server
	calls         modelCalls // the model's tool calls in flight
	socket        string
	listener      net.Listener
	socketErr     error
	notifier      Notifier
	opener        URLOpener
	logo          *logoFetcher
	followers     *conversation.Followers
	modelBrowser  modelapi.BrowserActions

	// What the window shows that the Host keeps: the approvals waiting for a decision (the
	// badge), the sign-ins the user started, the example agent's run, what the model's browser
	// shows.
	pending    atomic.Int64
	shownClock dialogClock
	attention  attention
	// wasReset is set once Reset everything ran: every service then answers ProblemWasReset.
	wasReset atomic.Bool
	signIn   signInFlows
	agent    exampleAgent
	seen     browserSeen

	// Developer mode: the listener of Poppydesk's client metadata, the saved settings it was
	// read from, and why saved settings could not be applied.
	agentSrv   *agentServer
	devSaved   DeveloperSettings
	devProblem string
	// findings are the rules Companies broke, as the engine noticed them (agentcore/inspect).
	findings *inspect.Log

	// started is closed when the start-up work (recovery, resumption) has finished; caughtUp
	// when the exchange log's catch-up to its window has.
	started, caughtUp chan struct{}

	// closers run in reverse order in Close.
	closers []closer
}

type closer struct {
	name string
	fn   func(ctx context.Context) error
}

// New builds the running Poppydesk from cfg. Parts that cannot run (no keyring, a locked
// keyring, no identity) leave the Host without an engine: the window opens and says why
// ([Host.Problem]); errors are returned only for what must stop the start (an unusable data
// folder or state database, a demo that cannot start).
func New(ctx context.Context, cfg Config) (*Host, error) {
	h := &Host{cfg: cfg, log: cfg.Logger, now: cfg.Now, getenv: cfg.Getenv, relay: &Relay{}, started: make(chan struct{}),
		caughtUp: make(chan struct{})}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.getenv == nil {
		h.getenv = os.Getenv
	}
	h.life = NewLifecycle(ctx, h.log)
	h.status = newStatusLine(h.relay, "")
	steps := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"the data folder", h.openFolders},
		{"the reference Company", h.startDemo},
		{"the state database", h.openState},
		{"developer mode", h.openDeveloper},
		{"the secrets", h.openSecrets},
		{"the identity", h.openIdentity},
		{"the engine", h.openEngine},
		{"the task coverage", h.openCoverage},
		{"the approval queue", h.openQueue},
		{"the conversations", h.openConversations},
		{"the controlled browsers", h.openBrowsers},
		{"the model's interface", h.openModelAPI},
		{"the window's parts", h.openWindowParts},
		{"the start-up work", h.startWork},
	}
	for _, s := range steps {
		if err := s.run(ctx); err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
			defer cancel()
			if cerr := h.Close(cctx); cerr != nil {
				h.log.Warn("closing after a failed start was not clean", "err", cerr)
			}
			return nil, fmt.Errorf("starting Poppydesk failed at %s: %w", s.name, err)
		}
	}
	h.log.Info("poppydesk started", "version", cfg.Version, "data", cfg.Paths.Data, "demo", h.demo != nil,
		"developer_mode", h.cfg.Developer.On(), "engine", h.problem == nil)
	return h, nil
}

func (h *Host) onClose(name string, fn func(ctx context.Context) error) {
	h.closers = append(h.closers, closer{name, fn})
}

// Close stops the Host: the root context is cancelled, in-flight work (an approval being written
// before it is sent) is awaited, and every part is closed in the reverse order of its start, all
// within ctx. It is safe to call more than once.
func (h *Host) Close(ctx context.Context) error {
	var errs []error
	// The model's calls first: a wait for the user's decision answers that the window was
	// closed and nothing was approved, while its connection is still open.
	wctx, cancel := context.WithTimeout(ctx, modelCallsGrace)
	h.calls.end(wctx)
	cancel()
	if err := h.life.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	for i := len(h.closers) - 1; i >= 0; i-- {
		c := h.closers[i]
		if err := c.fn(ctx); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, fmt.Errorf("closing %s: %w", c.name, err))
		}
	}
	h.closers = nil
	return errors.Join(errs...)
}

// CloseWithin is Close with a deadline d from now.
func (h *Host) CloseWithin(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return h.Close(ctx)
}

// Context is the Host's root context, cancelled when Close begins.
func (h *Host) Context() context.Context { return h.life.Context() }

// Relay is where the Host's services send events to the window; the window (Wails) or the
// browser-testable bridge attaches to it.
func (h *Host) Relay() *Relay { return h.relay }

// Now is the Host's clock (Config.Now).
func (h *Host) Now() time.Time { return h.now() }

// Logger is the Host's logger.
func (h *Host) Logger() *slog.Logger { return h.log }

// Problem says why the engine does not run (nil when it runs).
func (h *Host) Problem() *Problem { return h.problem }

// Engine is the protocol engine, with its sign-in layer (nil when Problem is set).
func (h *Host) Engine() *engine.Engine { return h.engine }

// OAuth is the engine's sign-in layer (nil when Problem is set).
func (h *Host) OAuth() *oauth.Client { return h.oauth }

// Queue is the approval queue (nil when Problem is set).
func (h *Host) Queue() *approvals.Queue { return h.queue }

// Conversations is the conversation manager (nil when Problem is set).
func (h *Host) Conversations() *conversation.Manager { return h.conversations }

// Followers are the window's streams on the conversations it shows (spec 8.6), at most
// conversation.DefaultMaxFollowed at once; nil when Problem is set.
func (h *Host) Followers() *conversation.Followers { return h.followers }

// State is the state database.
func (h *Host) State() *vault.State { return h.state }

// Secrets is the secret store (nil without a keyring).
func (h *Host) Secrets() store.Secrets { return h.secrets }

// ClientID is the identity Poppydesk signs with ("" without one).
func (h *Host) ClientID() string { return h.clientID }

// Socket is the Unix socket the model's MCP server listens on ("" when it does not listen).
func (h *Host) Socket() string {
	if h.listener == nil {
		return ""
	}
	return h.socket
}

// ModelServer is the model's MCP server (agentcore/modelapi) over this Host.
func (h *Host) ModelServer() *mcp.Server { return h.model }

// SignInRequests are the model's open sign-in requests, shown on the Sign-in screen.
func (h *Host) SignInRequests() *modelapi.MemorySignInRequests { return h.signIns }

// Status is the window's status line.
func (h *Host) Status() *StatusLine { return h.status }

// ---- the start, step by step ----

func (h *Host) openFolders(context.Context) error {
	if h.cfg.Paths.Data == "" {
		return errors.New("no data folder was given")
	}
	return h.cfg.Paths.Create()
}

func (h *Host) openState(ctx context.Context) error {
	dir := h.cfg.Paths.Data
	if h.stateDir != "" {
		dir = h.stateDir
	}
	path := filepath.Join(dir, StateFile)
	st, err := vault.OpenState(ctx, path, vault.StateOptions{Now: h.now, Logger: h.log, PruneLater: true}) // startWork prunes
	if err != nil {
		return fmt.Errorf("opening the state database %s failed: %w; check the data folder's permissions", path, err)
	}
	h.state = st
	h.onClose("the state database", func(context.Context) error { return st.Close() })
	return nil
}

func (h *Host) openSecrets(ctx context.Context) error {
	switch {
	case h.demo != nil:
		h.secrets, h.keyring = store.NewSecrets(store.NewMemoryKV()), "demo (in memory)"
		return nil
	case h.cfg.Secrets != nil:
		h.secrets, h.keyring = h.cfg.Secrets, "connected"
		return nil
	}
	kr := vault.NewKeyring(vault.KeyringOptions{Service: h.cfg.KeyringService, Logger: h.log})
	// One call finds out early, with a clear message, when no Secret Service answers or it is
	// locked.
	if _, err := kr.Names(ctx); err != nil {
		h.log.Warn("the system keyring is unavailable; Poppydesk runs without its engine", "err", err)
		if errors.Is(err, vault.ErrKeyringLocked) {
			h.problem, h.keyring = problem(ProblemKeyringLocked), "locked"
		} else {
			h.problem, h.keyring = problem(ProblemNoKeyring), "not available"
		}
		return nil
	}
	h.secrets, h.keyring = store.NewSecrets(kr), "connected"
	return nil
}

func (h *Host) openIdentity(ctx context.Context) error {
	if h.problem != nil {
		return nil
	}
	id := h.cfg.ClientID
	if h.demo != nil {
		id = h.demo.clientID()
	} else if err := h.chooseOperator(ctx); err != nil || h.problem != nil {
		return err
	} else if h.device != nil {
		id = h.device.ClientID // spec 4.1: the operator's published identity
	}
	if id == "" {
		v, err := h.state.GetSetting(ctx, SettingClientID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("reading the recorded identity failed: %w", err)
		}
		id = v
	}
	if id == "" {
		h.problem = problem(ProblemNoIdentity)
		return nil
	}
	h.clientID = id
	return nil
}

// transportConfig is the engine's HTTP policy: production rules, or developer mode's hosts and
// CAs (the demo's reference Company is one such Company).
func (h *Host) transportConfig() transport.Config {
	dev := h.cfg.Developer
	if h.demo != nil {
		dev = h.demo.developer()
	}
	return transport.Config{DevHosts: dev.Hosts, DevRootCAs: dev.RootCAs, Sleep: h.cfg.Tuning.Sleep, Observer: h.cfg.Tuning.Observer,
		DocumentTimeout: h.cfg.Tuning.DocumentTimeout, Timeout: h.cfg.Tuning.ExchangeTimeout}
}

func (h *Host) openEngine(ctx context.Context) error {
	if h.problem != nil {
		return nil
	}
	name := h.cfg.ClientName
	if name == "" {
		name = "Poppydesk"
	}
	if h.demo != nil {
		name = "Poppydesk (demo)"
	}
	// The identifiers in the Company's responses are kept out of feedback reports (spec 9.3).
	h.identifiers = coverage.NewSeen(0)
	h.findings = inspect.NewLog(0, h.now)
	h.findings.OnChange(func(inspect.Finding) { h.relay.Emit(EventInspector) })
	idc := identity.Config{ClientID: h.clientID, ClientName: name}
	op, err := h.remoteOperator() // nil: the self-operated root key
	if err != nil {
		return fmt.Errorf("preparing the operator %s: %w", h.device.Operator, err)
	}
	if op != nil {
		idc.ClientName, idc.JWKSURI = h.device.ClientName, h.device.JWKSURI
	}
	e, err := engine.New(engine.Config{Transport: h.transportConfig(), Identity: idc, Operator: op,
		Secrets: h.secrets, State: h.state, Logger: h.log, Now: h.now, Sleep: h.cfg.Tuning.Sleep, DirectTimeout: h.cfg.Tuning.DirectTimeout,
		OnExchange: h.exchangeRecorded})
	if err != nil {
		return err
	}
	h.onClose("the engine", e.Close)
	h.engine, h.oauth = e, e.OAuth()
	h.mountAgent()
	if h.demo != nil {
		return h.demo.connect(ctx, h)
	}
	return nil
}

// openCoverage builds task coverage (spec 9) over the engine: excluded tasks, feedback reports
// (recorded in the state database) and skills.
func (h *Host) openCoverage(context.Context) error {
	if h.problem != nil {
		return nil
	}
	svc, err := coverage.New(coverage.Config{Engine: h.engine, Reports: h.state, Settings: h.state, Seen: h.identifiers,
		Accounts: h.accountLabels, Held: h.heldSecrets, Now: h.now, Logger: h.engine.Logger()})
	if err != nil {
		return fmt.Errorf("starting task coverage failed: %w", err)
	}
	h.coverage = svc
	return nil
}

// accountLabels lists the labels of the accounts signed in at company (never a User ID).
func (h *Host) accountLabels(ctx context.Context, company string) ([]string, error) {
	pairs, err := h.secrets.Companies(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pairs {
		if p[0] == company && p[1] != "" {
			out = append(out, p[1])
		}
	}
	return out, nil
}

// heldSecrets lists every secret Poppydesk holds: what the keyring holds for every Company and
// account (store.HeldSecrets) and the secrets of the sign-ins in flight.
func (h *Host) heldSecrets(ctx context.Context) ([]string, error) {
	out, err := store.HeldSecrets(ctx, h.secrets)
	if err != nil {
		return nil, err
	}
	h.signIn.mu.Lock()
	defer h.signIn.mu.Unlock()
	for _, f := range h.signIn.flows {
		switch {
		case f.direct != nil:
			out = append(out, f.direct.Held()...)
		case f.device != nil:
			out = append(out, f.device.Held()...)
		}
	}
	return out, nil
}

// Coverage is task coverage (spec 9; nil when Problem is set).
func (h *Host) Coverage() *coverage.Service { return h.coverage }

// FeedbackReportsEnabled reports whether Poppydesk may send Companies reports of tasks it could
// not do (spec 9.3). They are on unless the user turned them off.
func (h *Host) FeedbackReportsEnabled(ctx context.Context) (bool, error) {
	if h.coverage == nil {
		return false, h.problemOr("task coverage is not running")
	}
	return h.coverage.ReportsEnabled(ctx)
}

// SetFeedbackReports turns the reports of tasks Poppydesk could not do (spec 9.3) on or off, as
// the user chose in Settings; the setting is kept in the state database and applies at once, to
// every Company.
func (h *Host) SetFeedbackReports(ctx context.Context, on bool) error {
	if err := h.settable(); err != nil {
		return err
	}
	if h.coverage == nil {
		return h.problemOr("task coverage is not running")
	}
	if err := h.coverage.SetReportsEnabled(ctx, on); err != nil {
		return fmt.Errorf("saving the reports setting failed: %w", err)
	}
	h.log.Info("feedback reports set from the window", "on", on)
	return nil
}

// problemOr is the Host's Problem as an error, or one that says what is missing.
func (h *Host) problemOr(what string) error {
	if h.problem != nil {
		return h.problem
	}
	return errors.New(what)
}

func (h *Host) openQueue(context.Context) error {
	if h.problem != nil {
		return nil
	}
	q, err := approvals.New(approvals.Config{Engine: h.engine, Store: h.state, Logger: h.log, Now: h.now,
		Sleep: h.cfg.Tuning.Sleep, MaxAttempts: h.cfg.Tuning.ApprovalAttempts, Conversations: conversationSender{h},
		OnChange: h.approvalChanged, Reporter: h.findingsReporter()})
	if err != nil {
		return fmt.Errorf("starting the approval queue failed: %w", err)
	}
	h.queue = q
	h.onClose("the approval queue", func(context.Context) error { return q.Close() })
	return nil
}

func (h *Host) openConversations(context.Context) error {
	if h.problem != nil {
		return nil
	}
	m, err := conversation.New(conversation.Config{Engine: h.engine, Store: h.state, Logger: h.log, Now: h.now, Sleep: h.cfg.Tuning.Sleep,
		OnUpdate: func(u conversation.Update) { h.relay.Emit(EventConversationsChanged, conversationChangeOf(u)) },
		OnOperation: func(ctx context.Context, f conversation.OperationFound) {
			if _, err := h.queue.ProposeFromConversation(ctx, f); err != nil {
				h.log.Warn("an operation in a conversation could not be put in the approval queue", "company", f.Company, "conversation", f.ConversationID, "err", err)
			}
		}})
	if err != nil {
		return err
	}
	h.conversations = m
	// The window's streams (spec 8.6), bounded; they stop when the Host closes (startWork).
	h.followers = conversation.NewFollowers(conversation.FollowersConfig{Context: h.life.Context(), Logger: h.log})
	return nil
}

// conversationSender sends approvals in conversations through the Host's Manager (the queue is
// built before the Manager, which proposes operations to it).
type conversationSender struct{ h *Host }

func (s conversationSender) SendApproval(ctx context.Context, company, id, messageID string, a operations.Approval, wait time.Duration) (*conversation.View, error) {
	if s.h.conversations == nil {
		return nil, errors.New("conversations are not running in this Poppydesk")
	}
	return s.h.conversations.SendApproval(ctx, company, id, messageID, a, wait)
}

func (h *Host) openBrowsers(context.Context) error {
	opts := h.cfg.Browser
	if opts.Logger == nil {
		opts.Logger = h.log
	}
	if h.demo != nil {
		opts.TrustSPKI = append(opts.TrustSPKI, h.demo.spki()...)
	}
	m := &browser.Manager{Root: filepath.Join(h.cfg.Paths.Data, "browser"), Base: opts}
	h.browsers = m
	// The model's browser (spec 6) over them; the window's Browser view shows what it reports.
	h.modelBrowser = browserjoin.NewBrowsers(browserjoin.BrowsersConfig{Sessions: browserSessions{m}, Engine: h.browserEngine,
		Observe: h.observeBrowser, Now: h.now, Logger: h.log, Reporter: h.findingsReporter()})
	h.onClose("the controlled browsers", func(context.Context) error { m.Close(); return nil })
	return nil
}

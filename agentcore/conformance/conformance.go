package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Statuses of a [Result]. Note is a rule of level NOTE that the Company did not keep: allowed
// behaviour a Personal Agent copes with (a 429, a DPoP nonce, a cut stream), shown so the
// developer knows; it never fails a run.
const (
	Pass = "pass"
	Fail = "fail"
	Note = "note"
	Skip = "skip"
)

// Actions a run may perform only when Config.AllowActions names them: each reaches the Company
// as more than a look (package doc).
const (
	// ActionSignIn signs in once in the User's browser (Config.SignIn) with Direct Sign-In; the
	// tokens are revoked at the end of the run.
	ActionSignIn = "sign-in"
	// ActionOperation sends the request Config.Operation names, with and without the Operations
	// extension, and approves one of its operations once: the Company performs it.
	ActionOperation = "operation"
	// ActionConversation starts a conversation with the Company Agent and closes it at the end.
	ActionConversation = "conversation"
	// ActionFeedback sends one feedback report (spec 9.3) that says it comes from a check.
	ActionFeedback = "feedback"
)

// Actions lists every action name.
var Actions = []string{ActionSignIn, ActionOperation, ActionConversation, ActionFeedback}

// DefaultTimeout bounds each request of a run (Config.Timeout).
const DefaultTimeout = 10 * time.Second

// DefaultSignInTimeout bounds how long a run waits for the User's browser (Config.SignIn).
const DefaultSignInTimeout = 5 * time.Minute

// OperationRequest is a request of the Company that returns an operation (Operations 4): the
// probes send it without the extension, with it, changed, and once approved (ActionOperation).
// The reference Company's is POST https://shop.localhost:PORT/api/orders/ord_7Hk2/exchanges with
// {"item_id":"itm_4Qa","replacement_sku":"stormline-insulated-m"}, changed to
// "stormline-insulated-l".
type OperationRequest struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	// Body is the JSON body (nil: none); Changed is the same request asking for something else
	// of the same action (nil: the "new revision" probes are skipped); Other is the same request
	// asking for another action, such as another item (nil: the "another action" probe is
	// skipped).
	Body    json.RawMessage `json:"body,omitempty"`
	Changed json.RawMessage `json:"changed,omitempty"`
	Other   json.RawMessage `json:"other,omitempty"`
}

// Config configures a run.
type Config struct {
	// Domain is the Company's domain (host[:port] in developer mode).
	Domain string
	// Transport is the HTTP policy (developer mode's hosts and CA for a Company under
	// development). Its DocumentTimeout is set to Timeout. Its Observer (and Inspect) see every
	// exchange of the run, redacted (`poppydesk check --har`).
	Transport transport.Config
	// Agent is the Personal Agent identity the Company can fetch (nil: every probe that needs
	// the Session header or client authentication is skipped).
	Agent *identity.Agent
	// Operator is the key behind Agent's jwks_uri; the client assertion probes sign assertions
	// with a wrong aud with it (nil: they are skipped).
	Operator identity.Operator
	// ProbeURL is a safe GET endpoint of the Company that verifies the Session header signed
	// out ("": the Session and version probes are skipped).
	ProbeURL string
	// SignedInURL is a safe GET endpoint of the Company that requires the access token, such
	// as one that lists the account's orders ("": the signed-in request probes are skipped).
	// Once signed in, the run sends it the correct signed-in request without cookies, the
	// access token in its query instead of Authorization, and a token issued for an MCP
	// server (spec 5.6, 7).
	SignedInURL string
	// AllowActions names the actions the run may perform ([Actions]).
	AllowActions []string
	// SignIn opens the User's browser at authURL (ActionSignIn); the run then waits for the
	// redirect back to its loopback listener, at most SignInTimeout. Nil: sign-in is skipped.
	SignIn func(ctx context.Context, authURL string) error
	// SignInTimeout bounds the wait for the User (default DefaultSignInTimeout).
	SignInTimeout time.Duration
	// Scopes are requested at sign-in ("": the issuer's scopes_supported, or poppy.json's
	// auth.scopes).
	Scopes []string
	// Operation is the request the operation probes send (nil: they are skipped).
	Operation *OperationRequest
	// Timeout bounds each request (default DefaultTimeout): a Company that does not answer in
	// time fails transport.answers-in-time, and the run goes on.
	Timeout time.Duration
	// Sleep waits d or until ctx ends (nil: a timer): Retry-After, the device polling interval.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

func (c Config) allows(action string) bool { return slices.Contains(c.AllowActions, action) }

// Result is one probe: check's reading in Evidence and, when the probe judged an answer of
// the Company, what the Company said in Said.
type Result struct {
	Probe    string           `json:"probe"`
	Rule     string           `json:"rule"`
	Level    inspect.Level    `json:"level"`
	Section  string           `json:"section"`
	Status   string           `json:"status"`
	Evidence string           `json:"evidence"`
	Said     *Said            `json:"company_said,omitempty"`
	Finding  *inspect.Finding `json:"finding,omitempty"`
}

// Said is the answer of the Company a probe judged: its status and, when it gave them, its
// error code and error_description (spec 7, RFC 6749 §5.2), in its own words.
type Said struct {
	// Status is the HTTP status; 0 for an authorization response that came back through the
	// User's browser, whose status the run does not see (Redirect).
	Status      int    `json:"status,omitempty"`
	Redirect    bool   `json:"redirect,omitempty"`
	Error       string `json:"error,omitempty"`
	Description string `json:"error_description,omitempty"`
}

// String is "HTTP 400 invalid_client: the words", or "a redirect back with error=…: the words".
func (s *Said) String() string {
	if s == nil {
		return ""
	}
	out := fmt.Sprintf("HTTP %d", s.Status)
	if s.Redirect {
		out = "a redirect back with error=" + s.Error
		if s.Description != "" {
			out += ": " + s.Description
		}
		return out
	}
	if s.Error != "" {
		out += " " + s.Error
	}
	if s.Description != "" {
		out += ": " + s.Description
	}
	return out
}

// Report is a whole run.
type Report struct {
	Domain   string        `json:"domain"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	Results  []Result      `json:"results"`
}

// MustFailures counts the failed MUST probes (the exit status of `poppydesk check`).
func (r *Report) MustFailures() int {
	n := 0
	for _, x := range r.Results {
		if x.Status == Fail && x.Level == inspect.MUST {
			n++
		}
	}
	return n
}

// Failed lists the failed probes.
func (r *Report) Failed() []Result { return r.with(Fail) }

// Noted lists the probes that noted allowed behaviour (status Note).
func (r *Report) Noted() []Result { return r.with(Note) }

func (r *Report) with(status string) []Result {
	var out []Result
	for _, x := range r.Results {
		if x.Status == status {
			out = append(out, x)
		}
	}
	return out
}

// Count counts the results of each status.
func (r *Report) Count() map[string]int {
	m := map[string]int{}
	for _, x := range r.Results {
		m[x.Status]++
	}
	return m
}

type run struct {
	cfg Config
	tr  *transport.Transport
	hc  *http.Client // no redirects; each request bounded by cfg.Timeout
	now func() time.Time

	mu  sync.Mutex
	rep *Report

	co  *discovery.Company
	dlg *delegated
	// flow and flowExt are the Sessions of the flows (join, operations, conversations, feedback)
	// of one User: without extensions, and declaring the operations extension.
	flow, flowExt probeSession
	tok           *tokens  // the sign-in's tokens (nil: signed out)
	dp            *dpopKey // the run's DPoP key (nil: the issuer does not bind tokens)
	oa            oauthState
	limited       []string // the 429s seen (spec 5.6), for the rate limit probe
	// mcpServers are the urls of the MCP servers whose protected resource metadata names them
	// (spec 7): a token for one can be asked for.
	mcpServers []string
	// signedIn is SignedInURL once it accepted the correct signed-in request and refused it
	// without the access token (nil: signedInSkip says why not).
	signedIn     *url.URL
	signedInSkip string
	notes        map[string]bool
}

// Run checks the Company at cfg.Domain.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Domain == "" {
		return nil, errors.New("conformance: name the Company's domain")
	}
	for _, a := range cfg.AllowActions {
		if !slices.Contains(Actions, a) {
			return nil, fmt.Errorf("conformance: %q is not an action a check can perform; the actions are %s", a, strings.Join(Actions, ", "))
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.SignInTimeout <= 0 {
		cfg.SignInTimeout = DefaultSignInTimeout
	}
	if cfg.Sleep == nil {
		cfg.Sleep = transport.SleepContext
	}
	tc := cfg.Transport
	if tc.Observer == nil {
		tc.Inspect = nil
	}
	tc.DocumentTimeout = cfg.Timeout
	tr, err := transport.New(tc)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	r := &run{cfg: cfg, tr: tr, now: cfg.Now, rep: &Report{Domain: cfg.Domain, Started: cfg.Now()}, notes: map[string]bool{},
		hc: &http.Client{Transport: tr.RoundTripper(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	start := time.Now()
	defer func() { r.rep.Duration = time.Since(start) }()
	ctx = inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseCheck, Name: "poppydesk check"})
	r.discovery(ctx)
	r.versionsProbe(ctx)
	r.delegate(ctx)
	r.sessionProbes(ctx)
	r.destinationProbes()
	r.mcpProbes(ctx)
	r.coverageProbes(ctx)
	r.joinProbes(ctx)
	r.prepareDPoP()
	device := r.startDeviceProbes(ctx)
	r.oauthProbes(ctx)
	r.signIn(ctx)
	r.signedInProbes(ctx)
	r.joinTokenProbe(ctx)
	r.operationProbes(ctx)
	r.conversationProbes(ctx)
	r.feedbackProbes(ctx)
	r.refreshProbes(ctx)
	r.mcpTokenProbe(ctx)
	r.revoke(ctx)
	device()
	r.rateProbe()
	return r.rep, nil
}

// add records a probe's result. A failure of a NOTE rule is a Note; a failed or noted probe
// carries its finding.
func (r *run) add(probe, rule, status, evidence string) {
	r.addSaid(probe, rule, status, evidence, nil)
}

// addSaid is add with what the Company said in the answer the probe judged.
func (r *run) addSaid(probe, rule, status, evidence string, said *Said) {
	rl, ok := inspect.RuleByID(rule)
	if !ok {
		panic("conformance: unknown rule " + rule) // a programming error: every rule is in the catalog
	}
	if status == Fail && rl.Level == inspect.NOTE {
		status = Note
	}
	res := Result{Probe: probe, Rule: rule, Level: rl.Level, Section: rl.Section, Status: status, Evidence: evidence, Said: said}
	if status == Fail || status == Note {
		f := inspect.NewFinding(rule, evidence)
		f.Company = r.cfg.Domain
		res.Finding = &f
	}
	r.mu.Lock()
	r.rep.Results = append(r.rep.Results, res)
	r.mu.Unlock()
}

// check records pass when bad is "", else fail with bad as the evidence.
func (r *run) check(probe, rule, bad, good string) {
	if bad != "" {
		r.add(probe, rule, Fail, bad)
		return
	}
	r.add(probe, rule, Pass, good)
}

// skipAll records each probe as skipped for why.
func (r *run) skipAll(why string, probes ...[2]string) {
	for _, p := range probes {
		r.add(p[0], p[1], Skip, why)
	}
}

// noteOnce records a Note of rule once per run (a DPoP nonce, a 429).
func (r *run) noteOnce(probe, rule, evidence string) {
	r.mu.Lock()
	seen := r.notes[rule]
	r.notes[rule] = true
	r.mu.Unlock()
	if !seen {
		r.add(probe, rule, Fail, evidence)
	}
}

func (r *run) discovery(ctx context.Context) {
	d, err := discovery.New(discovery.Config{Transport: r.tr, Now: r.now})
	if err != nil {
		r.add("discovery", inspect.RuleDiscoveryFetch, Fail, err.Error())
		return
	}
	var rep discovery.Report
	co, err := d.Discover(ctx, r.cfg.Domain, discovery.CollectAll(&rep), discovery.NoCache())
	late := ""
	for _, c := range rep.Results {
		rule := inspect.RuleOfCheck(c.Check)
		if c.Err == nil {
			r.add("discovery: "+c.Check, rule, Pass, "checked at "+c.URL)
			continue
		}
		if errors.Is(c.Err, transport.ErrTimeout) {
			late = c.Err.Error()
		}
		f := inspect.FromCheckError(c.Err)
		f.Company = r.cfg.Domain
		res := Result{Probe: "discovery: " + c.Check, Rule: f.Rule, Level: f.Level, Section: f.Section, Status: Fail, Evidence: f.Seen, Finding: &f}
		r.mu.Lock()
		r.rep.Results = append(r.rep.Results, res)
		r.mu.Unlock()
	}
	if err != nil && late == "" && errors.Is(err, transport.ErrTimeout) {
		late = err.Error()
	}
	if err != nil && len(rep.Results) == 0 {
		r.add("discovery", inspect.RuleDiscoveryFetch, Fail, err.Error()+hint(err, r.cfg.Domain))
	}
	if late != "" {
		r.add("transport: discovery answers in time", inspect.RuleAnswersInTime, Fail,
			fmt.Sprintf("a discovery document did not answer within %s, the bound of this run (--timeout): %s", r.cfg.Timeout, late))
	} else if len(rep.Results) > 0 {
		r.add("transport: discovery answers in time", inspect.RuleAnswersInTime, Pass, fmt.Sprintf("every discovery document answered within %s", r.cfg.Timeout))
	}
	// A collecting run returns what it found; the later probes run against it.
	r.co = co
}

func hint(err error, domain string) string {
	if h := discovery.DeveloperHint(err, domain); h != "" {
		return " (" + h + ")"
	}
	return ""
}

// need says why a group of probes cannot run ("" when it can): no Company, no identity.
func (r *run) need(identity bool) string {
	switch {
	case r.co == nil:
		return "discovery found no Company to probe"
	case identity && r.cfg.Agent == nil:
		return "no Personal Agent identity the Company can fetch; run check in developer mode (--dev-company)"
	}
	return ""
}

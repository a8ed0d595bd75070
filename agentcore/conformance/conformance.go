package conformance

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Statuses of a [Result].
const (
	Pass = "pass"
	Fail = "fail"
	Skip = "skip"
)

// Config configures a run.
type Config struct {
	// Domain is the Company's domain (host[:port] in developer mode).
	Domain string
	// Transport is the HTTP policy (developer mode's hosts and CA for a Company under
	// development).
	Transport transport.Config
	// Agent is the Personal Agent identity the Company can fetch (nil: the Session probes are
	// skipped).
	Agent *identity.Agent
	// ProbeURL is a safe GET endpoint of the Company that verifies the Session header signed
	// out ("": the Session and version probes are skipped).
	ProbeURL string
	// AllowActions names the probes that may perform a real action (none exist yet).
	AllowActions []string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Result is one probe.
type Result struct {
	Probe    string           `json:"probe"`
	Rule     string           `json:"rule"`
	Level    inspect.Level    `json:"level"`
	Section  string           `json:"section"`
	Status   string           `json:"status"`
	Evidence string           `json:"evidence"`
	Finding  *inspect.Finding `json:"finding,omitempty"`
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

// Failed lists the failed probes' rules.
func (r *Report) Failed() []Result {
	var out []Result
	for _, x := range r.Results {
		if x.Status == Fail {
			out = append(out, x)
		}
	}
	return out
}

type run struct {
	cfg  Config
	tr   *transport.Transport
	rep  *Report
	now  func() time.Time
	co   *discovery.Company
	hc   *http.Client
	dlg  *delegated
	sent int
}

// Run checks the Company at cfg.Domain.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Domain == "" {
		return nil, errors.New("conformance: name the Company's domain")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	tc := cfg.Transport
	tc.Inspect = nil
	tr, err := transport.New(tc)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	r := &run{cfg: cfg, tr: tr, now: now, rep: &Report{Domain: cfg.Domain, Started: now()}, hc: tr.NoRedirectClient()}
	start := time.Now()
	defer func() { r.rep.Duration = time.Since(start) }()
	r.discovery(ctx)
	r.sessionProbes(ctx)
	return r.rep, nil
}

func (r *run) add(probe, rule, status, evidence string) {
	rl, _ := inspect.RuleByID(rule)
	res := Result{Probe: probe, Rule: rule, Level: rl.Level, Section: rl.Section, Status: status, Evidence: evidence}
	if status == Fail {
		f := inspect.NewFinding(rule, evidence)
		res.Finding = &f
	}
	r.rep.Results = append(r.rep.Results, res)
}

func (r *run) discovery(ctx context.Context) {
	d, err := discovery.New(discovery.Config{Transport: r.tr, Now: r.now})
	if err != nil {
		r.add("discovery", inspect.RuleDiscoveryFetch, Fail, err.Error())
		return
	}
	var rep discovery.Report
	co, err := d.Discover(ctx, r.cfg.Domain, discovery.CollectAll(&rep), discovery.NoCache())
	for _, c := range rep.Results {
		rule := inspect.RuleOfCheck(c.Check)
		if c.Err == nil {
			r.add("discovery: "+c.Check, rule, Pass, "checked at "+c.URL)
			continue
		}
		f := inspect.FromCheckError(c.Err)
		res := Result{Probe: "discovery: " + c.Check, Rule: f.Rule, Level: f.Level, Section: f.Section, Status: Fail, Evidence: f.Seen, Finding: &f}
		r.rep.Results = append(r.rep.Results, res)
	}
	if err != nil && len(rep.Results) == 0 {
		r.add("discovery", inspect.RuleDiscoveryFetch, Fail, err.Error()+hint(err, r.cfg.Domain))
	}
	if err == nil {
		r.co = co
	} else if co != nil {
		// A collecting run returns what it found; the later probes still run against it.
		r.co = co
	}
}

func hint(err error, domain string) string {
	if h := discovery.DeveloperHint(err, domain); h != "" {
		return " (" + h + ")"
	}
	return ""
}

// sessionProbes sends the correct request and each broken Session header to ProbeURL.
func (r *run) sessionProbes(ctx context.Context) {
	names := []string{"session: wrong aud", "session: stale iat", "session: no delegation", "session: delegation key not in jwks_uri",
		"session: wrong typ", "session: ath without a token", "session: htu mismatch", "session: htm mismatch",
		"version: no Poppy-Version", "version: incompatible Poppy-Version", "version: the served version is accepted",
		"request: no redirect with credentials", "request: a new Session is not ended", "request: not rate limited"}
	skip := func(why string) {
		for _, n := range names {
			rule := inspect.RuleSessionVerify
			if strings.HasPrefix(n, "version") {
				rule = inspect.RuleVersionChecked
			}
			r.add(n, rule, Skip, why)
		}
	}
	switch {
	case r.co == nil:
		skip("discovery found no Company to probe")
		return
	case r.cfg.Agent == nil:
		skip("no Personal Agent identity the Company can fetch; run in developer mode")
		return
	case r.cfg.ProbeURL == "":
		skip("name a safe GET endpoint that verifies the Session header signed out with --probe-url")
		return
	}
	pu, err := url.Parse(r.cfg.ProbeURL)
	if err != nil || pu.Scheme != "https" || !r.companyHost(pu.Host) {
		skip(fmt.Sprintf("--probe-url %s is not an HTTPS URL on the Company's own hosts; broken Session headers go nowhere else", r.cfg.ProbeURL))
		return
	}
	dlg, err := newDelegated(ctx, r.cfg.Agent, r.now)
	if err != nil {
		skip("could not get a delegation from the identity: " + err.Error())
		return
	}
	r.dlg = dlg
	good := func() sessionClaims { return r.claims(http.MethodGet, pu) }

	// The correct request first: it must work, so the broken ones below show the checks.
	st, code, hdr, body := r.send(ctx, pu, http.MethodGet, dlg.sign(good(), sessionHeader()), r.co.Version, "")
	switch {
	case st >= 300 && st < 400:
		r.add("request: no redirect with credentials", inspect.RuleRedirectCredentials, Fail, fmt.Sprintf("the correct signed-out request got HTTP %d to %s", st, hdr.Get("Location")))
	default:
		r.add("request: no redirect with credentials", inspect.RuleRedirectCredentials, Pass, fmt.Sprintf("HTTP %d", st))
	}
	if code == "session_ended" {
		r.add("request: a new Session is not ended", inspect.RuleSessionEndedFresh, Fail, "a request in a new Session (a fresh sid) got session_ended: "+body)
	} else {
		r.add("request: a new Session is not ended", inspect.RuleSessionEndedFresh, Pass, fmt.Sprintf("HTTP %d %s", st, code))
	}
	if st == http.StatusTooManyRequests {
		r.add("request: not rate limited", inspect.RuleRateLimited, Fail, "the first request of the run got HTTP 429 (Retry-After: "+hdr.Get("Retry-After")+")")
	} else {
		r.add("request: not rate limited", inspect.RuleRateLimited, Pass, fmt.Sprintf("HTTP %d", st))
	}
	if code == "version_unsupported" {
		r.add("version: the served version is accepted", inspect.RuleVersionListedRefused, Fail, "Poppy-Version "+r.co.Version+", the version poppy.json serves, got version_unsupported")
	} else {
		r.add("version: the served version is accepted", inspect.RuleVersionListedRefused, Pass, fmt.Sprintf("Poppy-Version %s: HTTP %d %s", r.co.Version, st, code))
	}
	if code == "invalid_session" || st >= 500 || st == 0 {
		// The checks below would prove nothing when the correct request fails too.
		for _, n := range names[:10] {
			rule := inspect.RuleSessionVerify
			if strings.HasPrefix(n, "version") {
				rule = inspect.RuleVersionChecked
			}
			r.add(n, rule, Skip, fmt.Sprintf("the correct request got HTTP %d %s, so a refusal would prove nothing: %s", st, code, body))
		}
		return
	}

	type broken struct {
		name string
		mut  func(c *sessionClaims, h map[string]any) (method string, direct bool, foreign bool)
	}
	cases := []broken{
		{"session: wrong aud", func(c *sessionClaims, h map[string]any) (string, bool, bool) {
			c.Aud = "https://other.example"
			return "", false, false
		}},
		{"session: stale iat", func(c *sessionClaims, h map[string]any) (string, bool, bool) {
			c.Iat -= 3600
			return "", false, false
		}},
		{"session: no delegation", func(c *sessionClaims, h map[string]any) (string, bool, bool) { return "", true, false }},
		{"session: delegation key not in jwks_uri", func(c *sessionClaims, h map[string]any) (string, bool, bool) { return "", false, true }},
		{"session: wrong typ", func(c *sessionClaims, h map[string]any) (string, bool, bool) {
			h["typ"] = "JWT"
			return "", false, false
		}},
		{"session: ath without a token", func(c *sessionClaims, h map[string]any) (string, bool, bool) {
			sum := sha256.Sum256([]byte("no token was sent"))
			c.Ath = base64.RawURLEncoding.EncodeToString(sum[:])
			return "", false, false
		}},
		{"session: htu mismatch", func(c *sessionClaims, h map[string]any) (string, bool, bool) {
			c.Htu += "/other"
			return "", false, false
		}},
		{"session: htm mismatch", func(c *sessionClaims, h map[string]any) (string, bool, bool) {
			c.Htm = http.MethodPost
			return "", false, false
		}},
	}
	for _, bc := range cases {
		c, h := good(), sessionHeader()
		_, direct, foreign := bc.mut(&c, h)
		var jwt string
		switch {
		case direct:
			jwt = signDirect(c, h)
		case foreign:
			jwt, err = foreignDelegation(r.cfg.Agent.ClientID(), r.now, c, h)
			if err != nil {
				r.add(bc.name, inspect.RuleSessionVerify, Skip, err.Error())
				continue
			}
		default:
			jwt = dlg.sign(c, h)
		}
		st, code, _, body := r.send(ctx, pu, http.MethodGet, jwt, r.co.Version, "")
		if st == http.StatusBadRequest && code == "invalid_session" {
			r.add(bc.name, inspect.RuleSessionVerify, Pass, "HTTP 400 invalid_session")
		} else {
			r.add(bc.name, inspect.RuleSessionVerify, Fail, fmt.Sprintf("a Session JWT with %s got HTTP %d %s %s; it must get HTTP 400 invalid_session", strings.TrimPrefix(bc.name, "session: "), st, code, trim(body)))
		}
	}
	for _, vc := range []struct{ name, version string }{{"version: no Poppy-Version", ""}, {"version: incompatible Poppy-Version", "9.9"}} {
		st, code, _, body := r.send(ctx, pu, http.MethodGet, dlg.sign(good(), sessionHeader()), vc.version, "")
		if st == http.StatusBadRequest && code == "version_unsupported" {
			r.add(vc.name, inspect.RuleVersionChecked, Pass, "HTTP 400 version_unsupported")
		} else {
			r.add(vc.name, inspect.RuleVersionChecked, Fail, fmt.Sprintf("Poppy-Version %q got HTTP %d %s %s; it must get HTTP 400 version_unsupported", vc.version, st, code, trim(body)))
		}
	}
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// companyHost reports whether host is one of the Company's own hosts.
func (r *run) companyHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, ":443"))
	if strings.EqualFold(host, strings.TrimSuffix(r.co.Organization.Domain, ":443")) {
		return true
	}
	for _, a := range r.co.Channels.APIs {
		if u, err := url.Parse(a.URL); err == nil && strings.EqualFold(strings.TrimSuffix(u.Host, ":443"), host) {
			return true
		}
	}
	return false
}

func (r *run) claims(method string, u *url.URL) sessionClaims {
	htu := *u
	htu.RawQuery, htu.Fragment = "", ""
	return sessionClaims{Iss: r.cfg.Agent.ClientID(), Aud: r.co.Identifier, Sid: identity.NewID(16), Sub: "usr_" + identity.NewID(12),
		Htm: method, Htu: htu.String(), Iat: r.now().Unix(), Jti: identity.NewID(16)}
}

// send sends one probe request and returns the status, the spec 7 error code, the header and
// the body.
func (r *run) send(ctx context.Context, u *url.URL, method, session, version, token string) (int, string, http.Header, string) {
	req, err := http.NewRequestWithContext(inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseCheck, Name: "poppydesk check"}), method, u.String(), nil)
	if err != nil {
		return 0, "", nil, err.Error()
	}
	req.Header.Set("Poppy-Session", session)
	if version != "" {
		req.Header.Set("Poppy-Version", version)
	}
	req.Header.Set("Accept", "application/json")
	r.sent++
	resp, err := r.hc.Do(req)
	if err != nil {
		return 0, "", nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal(b, &e)
	return resp.StatusCode, e.Error, resp.Header, string(b)
}

// ---- Session JWTs, correct and broken (unexported: see the package doc) ----

type sessionClaims struct {
	Iss string `json:"iss"`
	Aud string `json:"aud"`
	Sid string `json:"sid"`
	Sub string `json:"sub"`
	Htm string `json:"htm"`
	Htu string `json:"htu"`
	Iat int64  `json:"iat"`
	Jti string `json:"jti"`
	Ath string `json:"ath,omitempty"`
}

func sessionHeader() map[string]any {
	return map[string]any{"typ": "poppy-session+jwt", "alg": "ES256"}
}

type delegated struct {
	key *ecdsa.PrivateKey
	kid string
	dlg string
}

func newDelegated(ctx context.Context, a *identity.Agent, now func() time.Time) (*delegated, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	_, kid, err := identity.PublicJWK(&k.PublicKey)
	if err != nil {
		return nil, err
	}
	dlg, _, err := a.Delegate(ctx, &k.PublicKey, time.Hour)
	if err != nil {
		return nil, err
	}
	return &delegated{key: k, kid: kid, dlg: dlg}, nil
}

func (d *delegated) sign(c sessionClaims, h map[string]any) string {
	h["kid"], h["poppy_dlg"] = d.kid, d.dlg
	return signES256(d.key, h, c)
}

// signDirect signs with a key of its own and carries no delegation.
func signDirect(c sessionClaims, h map[string]any) string {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, kid, _ := identity.PublicJWK(&k.PublicKey)
	h["kid"] = kid
	return signES256(k, h, c)
}

// foreignDelegation carries a delegation signed by a root key that is not in jwks_uri.
func foreignDelegation(clientID string, now func() time.Time, c sessionClaims, h map[string]any) (string, error) {
	root, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, rootKid, _ := identity.PublicJWK(&root.PublicKey)
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pub, kid, err := identity.PublicJWK(&k.PublicKey)
	if err != nil {
		return "", err
	}
	t := now().Unix()
	dlg := signES256(root, map[string]any{"typ": "poppy-delegation+jwt", "alg": "ES256", "kid": rootKid},
		map[string]any{"iss": clientID, "cnf": map[string]any{"jwk": pub}, "iat": t, "exp": t + 3600, "jti": identity.NewID(16)})
	h["kid"], h["poppy_dlg"] = kid, dlg
	return signES256(k, h, c), nil
}

// signES256 is a compact JWS with ES256 (RFC 7515, RFC 7518 §3.4: r||s, 32 bytes each).
func signES256(k *ecdsa.PrivateKey, header, claims any) string {
	hb, _ := json.Marshal(header)
	cb, _ := json.Marshal(claims)
	in := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
	sum := sha256.Sum256([]byte(in))
	rr, ss, err := ecdsa.Sign(rand.Reader, k, sum[:])
	if err != nil {
		return in + "."
	}
	sig := make([]byte, 64)
	rr.FillBytes(sig[:32])
	ss.FillBytes(sig[32:])
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

package conformance

// The Session header probes (spec 5.2, 5.3), the version probes (spec 3.4) and the correct
// request's probes (spec 3, 5.5, 5.6), and the builders of correct and broken Session JWTs.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

// delegate gets the run's delegated key from the identity and opens the Session of the flows.
func (r *run) delegate(ctx context.Context) {
	if r.need(true) != "" {
		return
	}
	dlg, err := newDelegated(ctx, r.cfg.Agent, r.now)
	if err != nil {
		r.add("session: a delegation from the identity", inspect.RuleSessionVerify, Skip, "could not get a delegation from the identity: "+err.Error())
		return
	}
	r.dlg, r.flow = dlg, newProbeSession()
	r.flowExt = probeSession{sid: newProbeSession().sid, sub: r.flow.sub}
}

// rateProbe says whether the run met a rate limit (spec 5.6): each 429 was waited out (its
// Retry-After) and the request sent again.
func (r *run) rateProbe() {
	const probe = "request: not rate limited"
	r.mu.Lock()
	seen := append([]string(nil), r.limited...)
	r.mu.Unlock()
	switch {
	case r.co == nil:
		r.add(probe, inspect.RuleRateLimited, Skip, "discovery found no Company to probe")
	case len(seen) > 0:
		r.add(probe, inspect.RuleRateLimited, Fail, fmt.Sprintf("%d request(s) of the run got HTTP 429 and were sent again after Retry-After; the first: %s", len(seen), seen[0]))
	default:
		r.add(probe, inspect.RuleRateLimited, Pass, "no request of the run got HTTP 429")
	}
}

// sessionProbes sends the correct request and each broken Session header to ProbeURL.
func (r *run) sessionProbes(ctx context.Context) {
	checks := [][2]string{{"session: wrong aud", inspect.RuleSessionVerify}, {"session: stale iat", inspect.RuleSessionVerify},
		{"session: no delegation", inspect.RuleSessionVerify}, {"session: delegation key not in jwks_uri", inspect.RuleSessionVerify},
		{"session: wrong typ", inspect.RuleSessionVerify}, {"session: ath without a token", inspect.RuleSessionVerify},
		{"session: htu mismatch", inspect.RuleSessionVerify}, {"session: htm mismatch", inspect.RuleSessionVerify},
		{probeHTTPHtu, inspect.RuleHTTPSOnly},
		{"version: no Poppy-Version", inspect.RuleVersionChecked}, {"version: incompatible Poppy-Version", inspect.RuleVersionChecked},
		{probeNewKey, inspect.RuleSessionNewKey}, {probeSidOwner, inspect.RuleSessionSidOwner}, {probeUnknown, inspect.RuleUnknownIgnored}}
	probes := append(checks[:len(checks):len(checks)], [2]string{"version: the served version is accepted", inspect.RuleVersionListedRefused},
		[2]string{"request: no redirect with credentials", inspect.RuleRedirectCredentials},
		[2]string{"request: a new Session is not ended", inspect.RuleSessionEndedFresh},
		[2]string{probeCookiesOut, inspect.RuleNoCookies})
	why := r.need(true)
	switch {
	case why != "":
	case r.dlg == nil:
		why = "could not get a delegation from the identity"
	case r.cfg.ProbeURL == "":
		why = "name a safe GET endpoint that verifies the Session header signed out with --probe-url"
	}
	if why != "" {
		r.skipAll(why, probes...)
		return
	}
	pu, err := url.Parse(r.cfg.ProbeURL)
	if err != nil || pu.Scheme != "https" || !r.companyHost(pu.Host) {
		r.skipAll(fmt.Sprintf("--probe-url %s is not an HTTPS URL on the Company's own hosts; broken Session headers go nowhere else", r.cfg.ProbeURL), probes...)
		return
	}
	dlg := r.dlg
	good := func() sessionClaims { return r.claims(http.MethodGet, pu) }

	// The correct request first: it must work, so the broken ones below show the checks.
	a := r.send(ctx, pu, dlg.sign(good(), sessionHeader()), r.co.Version)
	st, code := a.status, a.code
	r.cookieProbe(probeCookiesOut, "the correct signed-out request to --probe-url "+r.cfg.ProbeURL, a, func(cookie string) answer {
		return r.do(ctx, call{method: http.MethodGet, url: pu.String(), header: http.Header{
			"Poppy-Session": {dlg.sign(good(), sessionHeader())}, "Poppy-Version": {r.co.Version}, "Cookie": {cookie}}})
	})
	switch {
	case st >= 300 && st < 400:
		r.addSaid("request: no redirect with credentials", inspect.RuleRedirectCredentials, Fail, fmt.Sprintf("the correct signed-out request got HTTP %d to %s", st, a.header.Get("Location")), a.said())
	default:
		r.add("request: no redirect with credentials", inspect.RuleRedirectCredentials, Pass, a.words())
	}
	if code == "session_ended" {
		r.addSaid("request: a new Session is not ended", inspect.RuleSessionEndedFresh, Fail, "a request in a new Session (a fresh sid) got "+a.words(), a.said())
	} else {
		r.add("request: a new Session is not ended", inspect.RuleSessionEndedFresh, Pass, a.words())
	}
	if code == "version_unsupported" {
		r.addSaid("version: the served version is accepted", inspect.RuleVersionListedRefused, Fail, "Poppy-Version "+r.co.Version+", the version poppy.json serves, got "+a.words(), a.said())
	} else {
		r.add("version: the served version is accepted", inspect.RuleVersionListedRefused, Pass, fmt.Sprintf("Poppy-Version %s: %s", r.co.Version, a.words()))
	}
	if st == http.StatusBadRequest && code == "invalid_session" {
		// Spec 5.2: a Company MUST accept delegations signed with ES256, which the run's are.
		r.addSaid("session: a correct Session JWT is accepted", inspect.RuleSessionVerify, Fail, fmt.Sprintf("the correct signed-out request, its Session JWT signed with an ES256 delegation of a key in %s, got %s: a Company accepts it (in developer mode it must also trust Poppydesk's CA to fetch the client metadata)", r.cfg.Agent.ClientID(), a.words()), a.said())
		r.skipAll("the correct Session JWT is refused too, so a refusal of a broken one would prove nothing", checks...)
		return
	}
	if st/100 != 2 {
		// The checks below would prove nothing when the correct request is refused too: a
		// refusal of a broken Session JWT could be the same refusal.
		r.skipAll(fmt.Sprintf("the correct signed-out request to --probe-url %s got %s, so a refusal of a broken one would prove nothing; name with --probe-url a safe GET endpoint that answers a correct signed-out request with 2xx", r.cfg.ProbeURL, a.words()), checks...)
		return
	}
	// An endpoint that uses no Session claims may answer without verifying the header (spec
	// 5.3): a request without it shows which kind ProbeURL is.
	if bare := r.do(ctx, call{method: http.MethodGet, url: pu.String(), version: r.co.Version}); bare.status/100 == 2 {
		r.skipAll(fmt.Sprintf("--probe-url %s answered a request without the Session header with %s, as well as the correct one: it uses no Session claims (spec 5.3 lets such an endpoint skip verification), so what it does with a broken Session header proves nothing; name an endpoint that uses the Session, such as one that keeps state per Session", r.cfg.ProbeURL, bare.words()), checks...)
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
		// Spec 3: every URL the protocol exchanges is HTTPS, and Companies MUST reject one of
		// another scheme from a Personal Agent; the htu is such a URL.
		{probeHTTPHtu, func(c *sessionClaims, h map[string]any) (string, bool, bool) {
			c.Htu = "http" + strings.TrimPrefix(c.Htu, "https")
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
		a := r.send(ctx, pu, jwt, r.co.Version)
		rule, what, why := inspect.RuleSessionVerify, "a Session JWT with "+strings.TrimPrefix(bc.name, "session: "), ""
		if bc.name == probeHTTPHtu {
			rule, what, why = inspect.RuleHTTPSOnly, "a Session JWT whose htu is the http:// form of the request URL", "; a Company rejects a URL of another scheme from a Personal Agent (spec 3)"
		}
		if a.status == http.StatusBadRequest && a.code == "invalid_session" {
			r.addSaid(bc.name, rule, Pass, a.words(), a.said())
		} else {
			r.addSaid(bc.name, rule, Fail, fmt.Sprintf("%s got %s; it must get HTTP 400 invalid_session%s", what, a.words(), why), a.said())
		}
	}
	for _, vc := range []struct{ name, version string }{{"version: no Poppy-Version", ""}, {"version: incompatible Poppy-Version", "9.9"}} {
		a := r.send(ctx, pu, dlg.sign(good(), sessionHeader()), vc.version)
		if a.status == http.StatusBadRequest && a.code == "version_unsupported" {
			r.addSaid(vc.name, inspect.RuleVersionChecked, Pass, a.words(), a.said())
		} else {
			r.addSaid(vc.name, inspect.RuleVersionChecked, Fail, fmt.Sprintf("Poppy-Version %q got %s; it must get HTTP 400 version_unsupported", vc.version, a.words()), a.said())
		}
	}
	r.continuityProbes(ctx, pu)
	r.unknownProbe(ctx, pu)
}

const (
	probeHTTPHtu  = "request: an http:// htu is refused"
	probeNewKey   = "session: a new delegated key in the same Session"
	probeSidOwner = "session: a known sid with another User ID"
	probeUnknown  = "request: an unknown extension and claim are ignored"
)

// continuityProbes send three requests in one new Session to pu: the first with the run's
// delegated key, the second with a new one (spec 5.2: a Company MUST NOT treat a new delegated
// key as a reason to reject a request), the third with the first's key and another User ID
// (spec 5.3: a known sid continues its Session only with that Session's User ID).
func (r *run) continuityProbes(ctx context.Context, pu *url.URL) {
	s := newProbeSession()
	first := r.send(ctx, pu, r.dlg.sign(r.claimsIn(s, http.MethodGet, pu), sessionHeader()), r.co.Version)
	if first.status/100 != 2 {
		r.skipAll("the first request of a new Session got "+first.words()+", so what the Session's later requests get proves nothing",
			[2]string{probeNewKey, inspect.RuleSessionNewKey}, [2]string{probeSidOwner, inspect.RuleSessionSidOwner})
		return
	}
	if other, err := newDelegated(ctx, r.cfg.Agent, r.now); err != nil {
		r.add(probeNewKey, inspect.RuleSessionNewKey, Skip, "could not get a second delegation from the identity: "+err.Error())
	} else {
		a := r.send(ctx, pu, other.sign(r.claimsIn(s, http.MethodGet, pu), sessionHeader()), r.co.Version)
		if a.status/100 == 2 {
			r.addSaid(probeNewKey, inspect.RuleSessionNewKey, Pass, a.words(), a.said())
		} else {
			r.addSaid(probeNewKey, inspect.RuleSessionNewKey, Fail, fmt.Sprintf("the second request of a Session, signed with a new delegated key of the same Personal Agent, got %s after the first got %s; a Personal Agent may change its delegated key at any time (spec 5.2)", a.words(), first.words()), a.said())
		}
	}
	a := r.send(ctx, pu, r.dlg.sign(r.claimsIn(probeSession{sid: s.sid, sub: "usr_" + identity.NewID(12)}, http.MethodGet, pu), sessionHeader()), r.co.Version)
	if a.status == http.StatusBadRequest && a.code == "invalid_session" {
		r.addSaid(probeSidOwner, inspect.RuleSessionSidOwner, Pass, a.words(), a.said())
	} else {
		r.addSaid(probeSidOwner, inspect.RuleSessionSidOwner, Fail, fmt.Sprintf("a Session JWT with the sid of a Session of %s and the User ID of another User got %s; it must get HTTP 400 invalid_session (spec 5.3)", s.sub, a.words()), a.said())
	}
}

// unknownExtension is an extension no Company knows, in a domain the run's author controls
// (spec 3.3: names of others' extensions start with their domain).
const unknownExtension = `"poppydesk.dev/check-unknown";v="1"`

// unknownProbe sends the correct request in a new Session declaring an extension the Company
// cannot know and with a claim no version defines: spec 3.3 says a Company MUST ignore both,
// so it must be handled as the correct request was.
func (r *run) unknownProbe(ctx context.Context, pu *url.URL) {
	c := r.claims(http.MethodGet, pu)
	c.Unknown = "a claim no version of the protocol defines (spec 3.3)"
	a := r.do(ctx, call{method: http.MethodGet, url: pu.String(), header: http.Header{
		"Poppy-Session": {r.dlg.sign(c, sessionHeader())}, "Poppy-Version": {r.co.Version}, "Poppy-Extensions": {unknownExtension}}})
	if a.status/100 == 2 {
		r.addSaid(probeUnknown, inspect.RuleUnknownIgnored, Pass, a.words(), a.said())
		return
	}
	r.addSaid(probeUnknown, inspect.RuleUnknownIgnored, Fail, fmt.Sprintf("the correct request with Poppy-Extensions: %s and an unknown claim in its Session JWT got %s; the same request without them was accepted, and a Company ignores extensions and fields it does not know (spec 3.3)", unknownExtension, a.words()), a.said())
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

// claims are correct Session JWT claims for a request in a new Session.
func (r *run) claims(method string, u *url.URL) sessionClaims {
	return r.claimsIn(newProbeSession(), method, u)
}

// claimsIn are correct Session JWT claims for a request in the Session s (spec 5.2).
func (r *run) claimsIn(s probeSession, method string, u *url.URL) sessionClaims {
	htu := *u
	htu.RawQuery, htu.Fragment = "", ""
	return sessionClaims{Iss: r.cfg.Agent.ClientID(), Aud: r.co.Identifier, Sid: s.sid, Sub: s.sub,
		Htm: method, Htu: htu.String(), Iat: r.now().Unix(), Jti: identity.NewID(16)}
}

// send sends one probe request to u with the Session JWT session and Poppy-Version version
// ("": none).
func (r *run) send(ctx context.Context, u *url.URL, session, version string) answer {
	h := http.Header{"Poppy-Session": {session}}
	if version != "" {
		h.Set("Poppy-Version", version)
	}
	return r.do(ctx, call{method: http.MethodGet, url: u.String(), header: h})
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
	// Unknown is a claim no version defines, for the probe that it is ignored (spec 3.3).
	Unknown string `json:"poppydesk_check,omitempty"`
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

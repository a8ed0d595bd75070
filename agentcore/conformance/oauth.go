package conformance

// The authorization server probes (spec 4). Without the User:
//
//   - a token request with the run's correct client assertion and a code that was never issued:
//     the Company must fetch the client metadata and answer invalid_grant, not invalid_client
//     (spec 4.1), and answer in time;
//   - client assertions whose aud is not the issuer as one string (an array, a trailing slash,
//     the token endpoint): each must get invalid_client (spec 4.1, 10.4);
//   - an authorization request without code_challenge: refused, never a sign-in page (spec 4.2,
//     RFC 9700 §2.1.1), and its error redirect must carry iss = the issuer (RFC 9207);
//   - an authorization request with a redirect_uri the client never registered: an error page,
//     never a redirect there or a sign-in page (spec 4.2);
//   - a device authorization request: its links must be on the issuer's or a protected
//     resource's host (spec 4.3), and a poll after the interval must get authorization_pending
//     (RFC 8628 §3.5: slow_down is a NOTE);
//   - with dpop_signing_alg_values_supported, every token request carries a DPoP proof: a
//     use_dpop_nonce answer is a NOTE (RFC 9449 §8).
//
// With the User (ActionSignIn): one Direct Sign-In in the User's browser (Config.SignIn) to the
// run's loopback redirect URI; the redirect back must carry iss, the token response grants at
// least one scope and none beyond those asked (spec 4.7); a refresh must be accepted and should
// rotate (spec 4.4); the refresh token is revoked at the end (spec 4.6).

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

const (
	assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	deviceGrant   = "urn:ietf:params:oauth:grant-type:device_code"

	probeClientMeta = "oauth: the client metadata is fetched"
	probeTokenTime  = "transport: the token endpoint answers in time"
	probeAud        = "oauth: the client assertion's aud is checked exactly"
	probePKCE       = "oauth: PKCE is required"
	probeRedirect   = "oauth: redirect_uri is matched exactly"
	probeIss        = "oauth: iss on authorization responses"
	probeIssWrong   = "oauth: iss names the issuer"
	probeDevHost    = "oauth: the device link is on the Company's hosts"
	probeSlowDown   = "oauth: device polling at the interval"
	probeDevLink    = "oauth: opening the device link does not approve"
	probeDPoPToken  = "oauth: token endpoint DPoP nonce"
	probeScopeWide  = "oauth: granted scopes are within those asked"
	probeScopeNone  = "oauth: a sign-in grants a scope"
	probeRotation   = "oauth: refresh tokens rotate"
	probeRefreshOK  = "oauth: a new refresh token is accepted"
	probeDPoPRes    = "dpop: resource nonces"
)

// issSeen is one redirect back to the run's redirect URI: where it came from, its iss, and
// what it said (its error and error_description, when it is an error response).
type issSeen struct {
	what    string
	iss     string
	present bool
	said    *Said
}

// oauthState is what the OAuth probes share: the issuer's metadata as discovery read it, the
// iss values seen, why the run is signed out.
type oauthState struct {
	mu        sync.Mutex
	dead      bool // the token endpoint did not answer in time
	iss       []issSeen
	signedOut string
	// pkcePage: an authorization request without code_challenge got a page, so whether the
	// Company refuses it shows only after the User signs in (pkceSignIn).
	pkcePage bool
}

func (r *run) as() (issuer, token string, ok bool) {
	if r.co == nil || r.co.AuthorizationServer == nil || r.co.AuthorizationServer.Issuer == "" {
		return "", "", false
	}
	return r.co.AuthorizationServer.Issuer, r.co.AuthorizationServer.TokenEndpoint, true
}

func (r *run) tokenEndpointDead() bool { r.oa.mu.Lock(); defer r.oa.mu.Unlock(); return r.oa.dead }

// tokenRequest posts v to the token endpoint with the run's client assertion (spec 4.1).
func (r *run) tokenRequest(ctx context.Context, v url.Values, dpop bool) answer {
	issuer, token, _ := r.as()
	if r.tokenEndpointDead() {
		return answer{err: errors.New("the token endpoint did not answer in time earlier in this run, so it is not asked again")}
	}
	ca, err := r.cfg.Agent.ClientAssertion(ctx, issuer)
	if err != nil {
		return answer{err: err}
	}
	v.Set("client_assertion_type", assertionType)
	v.Set("client_assertion", ca)
	v.Set("client_id", r.cfg.Agent.ClientID())
	a := r.form(ctx, token, v, dpop)
	if a.timedOut() {
		r.oa.mu.Lock()
		first := !r.oa.dead
		r.oa.dead = true
		r.oa.mu.Unlock()
		if first {
			r.add(probeTokenTime, inspect.RuleAnswersInTime, Fail, fmt.Sprintf("the token endpoint %s did not answer within %s, the bound of this run (--timeout); a sign-in, refresh or revocation would wait as long", token, r.cfg.Timeout))
		}
	}
	return a
}

// loopbackURI is the registered loopback redirect URI on port (RFC 8252 §7.3: any port).
func loopbackURI(port int, path string) string {
	u, _ := url.Parse(identity.LoopbackRedirectURI)
	u.Host = net.JoinHostPort(u.Hostname(), fmt.Sprint(port))
	if path != "" {
		u.Path = path
	}
	return u.String()
}

func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// scopes are the scopes the run asks for: Config.Scopes, the issuer's scopes_supported, or
// poppy.json's described scopes.
func (r *run) scopes() []string {
	if len(r.cfg.Scopes) > 0 {
		return r.cfg.Scopes
	}
	if as := r.co.AuthorizationServer; as != nil && len(as.ScopesSupported) > 0 {
		return as.ScopesSupported
	}
	var out []string
	for _, s := range r.co.Scopes {
		out = append(out, s.Name)
	}
	return out
}

func (r *run) authURL(redirectURI, state, challenge string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {r.cfg.Agent.ClientID()}, "redirect_uri": {redirectURI},
		"scope": {strings.Join(r.scopes(), " ")}, "state": {state}}
	if challenge != "" {
		q.Set("code_challenge", challenge)
		q.Set("code_challenge_method", "S256")
	}
	return r.co.AuthorizationServer.AuthorizationEndpoint + "?" + q.Encode()
}

func (r *run) oauthProbes(ctx context.Context) {
	all := [][2]string{{probeClientMeta, inspect.RuleOAuthClientMetadata}, {probeAud, inspect.RuleOAuthAssertionAud},
		{probePKCE, inspect.RuleOAuthPKCE}, {probeRedirect, inspect.RuleOAuthRedirectExact}}
	why := r.need(true)
	if _, _, ok := r.as(); why == "" && !ok {
		why = "the Company has no issuer (spec 3.2): it offers no sign-in"
	}
	if why != "" {
		r.skipAll(why, all...)
		r.oa.signedOut = why
		return
	}
	as := r.co.AuthorizationServer
	r.clientProbes(ctx)
	if as.AuthorizationEndpoint == "" {
		r.skipAll("the issuer's metadata has no authorization_endpoint (Direct Sign-In)", all[2:]...)
		return
	}
	r.pkceProbe(ctx)
	r.redirectProbe(ctx)
}

// clientProbes: the correct assertion with a code never issued, then the wrong audiences.
func (r *run) clientProbes(ctx context.Context) {
	bogus := url.Values{"grant_type": {"authorization_code"}, "code": {"poppydesk-check-" + identity.NewID(12)},
		"redirect_uri": {loopbackURI(1, "")}, "code_verifier": {identity.NewID(32)}}
	a := r.tokenRequest(ctx, bogus, true)
	issuer, token, _ := r.as()
	switch {
	case a.status == 0:
		r.skipAll("the token endpoint gave no answer: "+errText(a.err), [2]string{probeClientMeta, inspect.RuleOAuthClientMetadata}, [2]string{probeAud, inspect.RuleOAuthAssertionAud})
		return
	case a.code == "invalid_client" && aboutAudience(a.desc):
		// The Company's own words say the audience: it wants another aud than the issuer.
		r.addSaid(probeAud, inspect.RuleOAuthAssertionAud, Fail, fmt.Sprintf("the token endpoint refused the run's correct client assertion, whose aud is the issuer %s as one string (spec 4.1), and its words name the audience: %s; a Company accepts exactly that aud (for a library that compares aud with its token URL, set that URL to the issuer)", issuer, a.words()), a.said())
		r.add(probeClientMeta, inspect.RuleOAuthClientMetadata, Skip, "the Company refused the correct assertion's audience (see "+probeAud+"), so whether it fetched the client metadata is not known")
		return
	case a.code == "invalid_client":
		r.addSaid(probeClientMeta, inspect.RuleOAuthClientMetadata, Fail, fmt.Sprintf("the token endpoint refused the run's correct client assertion with %s: the Company must fetch %s and its jwks_uri without redirects; in developer mode it must trust Poppydesk's CA for that host", a.words(), r.cfg.Agent.ClientID()), a.said())
		r.add(probeAud, inspect.RuleOAuthAssertionAud, Skip, "the correct client assertion is refused too, so a refusal of a wrong aud would prove nothing")
		return
	}
	r.add(probeTokenTime, inspect.RuleAnswersInTime, Pass, fmt.Sprintf("the token endpoint answered within %s", r.cfg.Timeout))
	r.addSaid(probeClientMeta, inspect.RuleOAuthClientMetadata, Pass, "a code never issued got "+a.words()+", so the client was authenticated", a.said())
	if r.dp != nil {
		r.mu.Lock()
		noted := r.notes[inspect.RuleOAuthDPoPNonce]
		r.mu.Unlock()
		if !noted {
			r.add(probeDPoPToken, inspect.RuleOAuthDPoPNonce, Pass, "a token request's DPoP proof without a nonce was accepted")
		}
	} else {
		r.add(probeDPoPToken, inspect.RuleOAuthDPoPNonce, Skip, "the issuer lists no dpop_signing_alg_values_supported with ES256")
	}
	if r.cfg.Operator == nil {
		r.add(probeAud, inspect.RuleOAuthAssertionAud, Skip, "no signing key of the identity was given to sign client assertions with a wrong aud")
		return
	}
	var accepted, refused []string
	var said *Said
	for _, aud := range []any{[]string{issuer}, issuer + "/", token} {
		ca, err := r.assertion(ctx, aud)
		if err != nil {
			r.add(probeAud, inspect.RuleOAuthAssertionAud, Skip, "signing a client assertion: "+err.Error())
			return
		}
		v := url.Values{"grant_type": {"authorization_code"}, "code": {"poppydesk-check-" + identity.NewID(12)}, "redirect_uri": {loopbackURI(1, "")},
			"code_verifier": {identity.NewID(32)}, "client_assertion_type": {assertionType}, "client_assertion": {ca}, "client_id": {r.cfg.Agent.ClientID()}}
		b, _ := json.Marshal(aud)
		a := r.form(ctx, token, v, true)
		if a.code == "invalid_client" {
			refused = append(refused, string(b))
		} else {
			accepted = append(accepted, fmt.Sprintf("aud %s got %s", b, a.words()))
			if said == nil {
				said = a.said()
			}
		}
	}
	if len(accepted) > 0 {
		r.addSaid(probeAud, inspect.RuleOAuthAssertionAud, Fail, joinBad(accepted, "a client assertion whose aud is not exactly the issuer "+issuer+" as one string must get invalid_client (it got past client authentication)"), said)
		return
	}
	r.add(probeAud, inspect.RuleOAuthAssertionAud, Pass, "invalid_client for aud "+strings.Join(refused, ", "))
}

// aboutAudience reports whether an OAuth error_description speaks of the audience.
func aboutAudience(desc string) bool {
	d := strings.ToLower(desc)
	return strings.Contains(d, "audience") || strings.Contains(d, "aud ") || strings.Contains(d, "'aud'") || strings.Contains(d, "\"aud\"") || strings.Contains(d, "aud's")
}

// assertion is a client assertion like the identity's, signed with its key, with aud as given.
func (r *run) assertion(ctx context.Context, aud any) (string, error) {
	kid, alg, err := r.cfg.Operator.SigningKey(ctx)
	if err != nil {
		return "", err
	}
	hdr, _ := json.Marshal(map[string]string{"alg": alg.String(), "kid": kid})
	now := r.now()
	cid := r.cfg.Agent.ClientID()
	payload, _ := json.Marshal(map[string]any{"iss": cid, "sub": cid, "aud": aud, "iat": now.Unix(), "exp": now.Add(identity.AssertionLifetime).Unix(), "jti": identity.NewID(16)})
	input := jwsbb.SignBuffer(nil, hdr, payload, base64.RawURLEncoding, true)
	sig, err := r.cfg.Operator.Sign(ctx, kid, alg, input)
	if err != nil {
		return "", err
	}
	return string(input) + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// back reads a redirect back to redirectURI from an authorization endpoint's answer: its query,
// or nil when the answer is no such redirect.
func back(a answer, redirectURI string) url.Values {
	if a.status/100 != 3 {
		return nil
	}
	loc, err := url.Parse(a.header.Get("Location"))
	want, _ := url.Parse(redirectURI)
	if err != nil || loc.Scheme != want.Scheme || loc.Host != want.Host || loc.Path != want.Path {
		return nil
	}
	return loc.Query()
}

func (r *run) pkceProbe(ctx context.Context) {
	ru := loopbackURI(9, "")
	a := r.do(ctx, call{method: http.MethodGet, url: r.authURL(ru, identity.NewID(12), ""), accept: "text/html", noRetry: true})
	q := back(a, ru)
	switch {
	case q != nil && q.Get("error") != "":
		r.addSaid(probePKCE, inspect.RuleOAuthPKCE, Pass, "redirected back with error="+q.Get("error"), &Said{Redirect: true, Error: q.Get("error"), Description: q.Get("error_description")})
		r.sawIss("the error response to an authorization request without code_challenge", q)
	case q != nil:
		r.add(probePKCE, inspect.RuleOAuthPKCE, Fail, "an authorization request without code_challenge was redirected back without an error")
	case a.status == http.StatusOK:
		// A page: the Company may refuse the request after the User signs in (pkceSignIn).
		r.oa.pkcePage = true
	case a.status >= 400:
		r.addSaid(probePKCE, inspect.RuleOAuthPKCE, Pass, "refused with an error page: "+a.words(), a.said())
	default:
		r.add(probePKCE, inspect.RuleOAuthPKCE, Skip, "the authorization endpoint answered "+a.words())
	}
}

func (r *run) redirectProbe(ctx context.Context) {
	_, ch := pkce()
	bad := loopbackURI(9, "/poppydesk-check-unregistered")
	a := r.do(ctx, call{method: http.MethodGet, url: r.authURL(bad, identity.NewID(12), ch), accept: "text/html", noRetry: true})
	loc := a.header.Get("Location")
	switch {
	case a.status/100 == 3 && strings.HasPrefix(loc, bad):
		r.add(probeRedirect, inspect.RuleOAuthRedirectExact, Fail, "an authorization request with the unregistered redirect_uri "+bad+" was redirected there; only the client metadata's redirect_uris may be used")
	case a.status == http.StatusOK:
		r.add(probeRedirect, inspect.RuleOAuthRedirectExact, Fail, "an authorization request with the unregistered redirect_uri "+bad+" got a page (HTTP 200); it must be refused with an error page before sign-in")
	case a.status >= 400:
		r.addSaid(probeRedirect, inspect.RuleOAuthRedirectExact, Pass, "refused with an error page: "+a.words(), a.said())
	default:
		r.add(probeRedirect, inspect.RuleOAuthRedirectExact, Skip, "the authorization endpoint answered "+a.words())
	}
}

func (r *run) sawIss(what string, q url.Values) {
	var said *Said
	if q.Get("error") != "" {
		said = &Said{Redirect: true, Error: q.Get("error"), Description: q.Get("error_description")}
	}
	r.oa.mu.Lock()
	r.oa.iss = append(r.oa.iss, issSeen{what: what, iss: q.Get("iss"), present: q.Has("iss"), said: said})
	r.oa.mu.Unlock()
}

// pkceSignIn follows an authorization request without code_challenge that got a page: the
// User signs in once more, in their browser, and the Company must refuse it then (an error
// redirect) or refuse its code without code_verifier at the token endpoint (spec 4.2: the
// grant is with PKCE; RFC 9700 §2.1.1). Without a sign-in allowed, the probe is skipped.
func (r *run) pkceSignIn(ctx context.Context) {
	if !r.oa.pkcePage {
		return
	}
	switch {
	case !r.cfg.allows(ActionSignIn) || r.cfg.SignIn == nil:
		r.add(probePKCE, inspect.RuleOAuthPKCE, Skip, "an authorization request without code_challenge got a page (HTTP 200): the Company may refuse it after the User signs in, which a run sees only with --allow-actions "+ActionSignIn+" (you then sign in twice)")
		return
	case r.tokenEndpointDead():
		r.add(probePKCE, inspect.RuleOAuthPKCE, Skip, "an authorization request without code_challenge got a page (HTTP 200), and the token endpoint did not answer in time")
		return
	}
	q, err := r.browserSignIn(ctx, false)
	if err != nil {
		r.add(probePKCE, inspect.RuleOAuthPKCE, Skip, "an authorization request without code_challenge got a page (HTTP 200); the sign-in that would show its outcome did not finish: "+err.Error())
		return
	}
	r.sawIss("the redirect back from a sign-in without code_challenge", q.back)
	if e := q.back.Get("error"); e != "" {
		r.addSaid(probePKCE, inspect.RuleOAuthPKCE, Pass, "the sign-in without code_challenge was refused after the User signed in: error="+e,
			&Said{Redirect: true, Error: e, Description: q.back.Get("error_description")})
		return
	}
	a := r.tokenRequest(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {q.back.Get("code")}, "redirect_uri": {q.redirectURI}}, true)
	var t struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if a.status == http.StatusOK && json.Unmarshal(a.body, &t) == nil && t.AccessToken != "" {
		r.addSaid(probePKCE, inspect.RuleOAuthPKCE, Fail, "an authorization request without code_challenge got a sign-in page, a code after the User signed in, and tokens for that code without code_verifier: the grant works without PKCE, so a stolen code can be redeemed", a.said())
		r.revokeToken(ctx, t.RefreshToken)
		return
	}
	r.addSaid(probePKCE, inspect.RuleOAuthPKCE, Pass, "the code of a sign-in without code_challenge was refused at the token endpoint without code_verifier: "+a.words(), a.said())
}

// issProbes judge every redirect back the run saw (RFC 9207, spec 4.2: iss on every
// authorization response, equal to the issuer).
func (r *run) issProbes() {
	issuer, _, ok := r.as()
	r.oa.mu.Lock()
	seen := slices.Clone(r.oa.iss)
	r.oa.mu.Unlock()
	if !ok || len(seen) == 0 {
		why := "no authorization response came back to the run's redirect URI"
		if !ok {
			why = "the Company has no issuer"
		}
		r.skipAll(why, [2]string{probeIss, inspect.RuleOAuthIss}, [2]string{probeIssWrong, inspect.RuleOAuthIssWrong})
		return
	}
	var missing, wrong, good []string
	var said *Said
	for _, s := range seen {
		switch {
		case !s.present:
			missing = append(missing, s.what+" carried no iss")
			if said == nil {
				said = s.said
			}
		case s.iss != issuer:
			wrong = append(wrong, fmt.Sprintf("%s carried iss %q, not the issuer %q", s.what, s.iss, issuer))
		default:
			good = append(good, s.what)
		}
	}
	if len(missing) > 0 {
		r.addSaid(probeIss, inspect.RuleOAuthIss, Fail, joinBad(missing, "a Personal Agent must refuse an authorization response without iss"), said)
	} else {
		r.add(probeIss, inspect.RuleOAuthIss, Pass, "iss on "+strings.Join(append(slices.Clone(good), whats(wrong)...), "; "))
	}
	if len(wrong) == 0 && len(good) == 0 {
		r.add(probeIssWrong, inspect.RuleOAuthIssWrong, Skip, "no authorization response carried iss")
		return
	}
	r.check(probeIssWrong, inspect.RuleOAuthIssWrong, joinBad(wrong, "a Personal Agent refuses it: it may come from another Company's sign-in"), "iss = "+issuer+" on "+strings.Join(good, "; "))
}

func whats(s []string) []string {
	var out []string
	for _, x := range s {
		w, _, _ := strings.Cut(x, " carried")
		out = append(out, w)
	}
	return out
}

// prepareDPoP makes the run's DPoP key when the issuer binds tokens (RFC 9449 §5.1: it lists
// dpop_signing_alg_values_supported), before any probe sends a token request.
func (r *run) prepareDPoP() {
	if _, _, ok := r.as(); !ok || !slices.Contains(r.co.AuthorizationServer.DPoPSigningAlgs, "ES256") {
		return
	}
	if k, err := newDPoPKey(); err == nil {
		r.dp = k
	}
}

// startDeviceProbes runs the Device Sign-In probes while the others go on (the poll waits for
// the interval, 5 s by default); the function returned waits for them.
func (r *run) startDeviceProbes(ctx context.Context) func() {
	both := [][2]string{{probeDevHost, inspect.RuleOAuthDeviceHost}, {probeSlowDown, inspect.RuleOAuthSlowDown}, {probeDevLink, inspect.RuleOAuthDeviceLink}}
	why := r.need(true)
	if why == "" {
		if _, _, ok := r.as(); !ok {
			why = "the Company has no issuer"
		} else if as := r.co.AuthorizationServer; as.DeviceAuthorizationEndpoint == "" || !slices.Contains(as.GrantTypesSupported, deviceGrant) {
			why = "the issuer offers no Device Sign-In (device_authorization_endpoint and the device_code grant)"
		}
	}
	if why != "" {
		r.skipAll(why, both...)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.deviceProbes(ctx)
	}()
	return func() { <-done }
}

func (r *run) deviceProbes(ctx context.Context) {
	as := r.co.AuthorizationServer
	ca, err := r.cfg.Agent.ClientAssertion(ctx, as.Issuer)
	if err != nil {
		r.skipAll(err.Error(), [2]string{probeDevHost, inspect.RuleOAuthDeviceHost}, [2]string{probeSlowDown, inspect.RuleOAuthSlowDown}, [2]string{probeDevLink, inspect.RuleOAuthDeviceLink})
		return
	}
	v := url.Values{"scope": {strings.Join(r.scopes(), " ")}, "client_id": {r.cfg.Agent.ClientID()}, "client_assertion_type": {assertionType}, "client_assertion": {ca}}
	a := r.do(ctx, call{method: http.MethodPost, url: as.DeviceAuthorizationEndpoint, body: []byte(v.Encode()), contentType: "application/x-www-form-urlencoded"})
	var d struct {
		DeviceCode              string `json:"device_code"`
		VerificationURI         string `json:"verification_uri"`
		VerificationURIComplete string `json:"verification_uri_complete"`
		Interval                int    `json:"interval"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &d) != nil || d.DeviceCode == "" {
		r.skipAll("the device authorization request got "+a.words(), [2]string{probeDevHost, inspect.RuleOAuthDeviceHost}, [2]string{probeSlowDown, inspect.RuleOAuthSlowDown}, [2]string{probeDevLink, inspect.RuleOAuthDeviceLink})
		return
	}
	var bad []string
	for _, link := range []string{d.VerificationURI, d.VerificationURIComplete} {
		if link == "" {
			continue
		}
		if why := r.deviceHostProblem(link); why != "" {
			bad = append(bad, why)
		}
	}
	r.check(probeDevHost, inspect.RuleOAuthDeviceHost, joinBad(bad, "a Personal Agent must not show it: it could be another Company's sign-in page"), "verification_uri "+d.VerificationURI)
	// Spec 4.3: opening the link MUST NOT approve the request by itself. The run opens
	// verification_uri_complete as a browser without cookies would, when it is on the
	// Company's hosts, and the poll below must still be pending.
	opened := ""
	switch {
	case d.VerificationURIComplete == "":
		r.add(probeDevLink, inspect.RuleOAuthDeviceLink, Skip, "the device authorization gave no verification_uri_complete")
	case r.deviceHostProblem(d.VerificationURIComplete) != "":
		r.add(probeDevLink, inspect.RuleOAuthDeviceLink, Skip, "verification_uri_complete is not on the Company's hosts (see "+probeDevHost+"); the run does not open it")
	default:
		page := r.do(ctx, call{method: http.MethodGet, url: d.VerificationURIComplete, accept: "text/html", header: http.Header{"Sec-Fetch-Dest": {"document"}, "Sec-Fetch-Mode": {"navigate"}}})
		got := page.words()
		if page.status != 0 {
			got = fmt.Sprintf("HTTP %d", page.status)
		}
		opened = fmt.Sprintf("verification_uri_complete (%s) was opened and answered %s", redactURL(d.VerificationURIComplete), got)
	}
	interval := time.Duration(d.Interval) * time.Second
	if d.Interval <= 0 {
		interval = 5 * time.Second // RFC 8628 §3.2
	}
	if err := r.cfg.Sleep(ctx, interval); err != nil {
		r.add(probeSlowDown, inspect.RuleOAuthSlowDown, Skip, "the run ended before the polling interval")
		if opened != "" {
			r.add(probeDevLink, inspect.RuleOAuthDeviceLink, Skip, "the run ended before the polling interval")
		}
		return
	}
	poll := r.tokenRequest(ctx, url.Values{"grant_type": {deviceGrant}, "device_code": {d.DeviceCode}}, false)
	if opened != "" {
		switch {
		case poll.code == "authorization_pending" || poll.code == "slow_down":
			r.addSaid(probeDevLink, inspect.RuleOAuthDeviceLink, Pass, opened+"; the next poll got "+poll.words(), poll.said())
		case poll.status == http.StatusOK:
			r.addSaid(probeDevLink, inspect.RuleOAuthDeviceLink, Fail, opened+", and the next poll got tokens (HTTP 200) with no one approving: a link someone else opens signs the device in (spec 4.3, RFC 10027 §2)", poll.said())
		default:
			r.addSaid(probeDevLink, inspect.RuleOAuthDeviceLink, Skip, opened+"; the next poll got "+poll.words(), poll.said())
		}
	}
	switch poll.code {
	case "authorization_pending":
		r.add(probeSlowDown, inspect.RuleOAuthSlowDown, Pass, fmt.Sprintf("a poll %s after the device authorization got authorization_pending", interval))
	case "slow_down":
		r.add(probeSlowDown, inspect.RuleOAuthSlowDown, Fail, fmt.Sprintf("the first poll, %s after the device authorization (its interval), got slow_down: a Personal Agent then polls %s less often (RFC 8628 §3.5), and the User waits longer", interval, 5*time.Second))
	default:
		r.add(probeSlowDown, inspect.RuleOAuthSlowDown, Skip, "the first poll got "+poll.words())
	}
}

// deviceHostProblem says why a device link's host is not the issuer's or a protected
// resource's, or a subdomain of either (spec 4.3), "" when it is.
func (r *run) deviceHostProblem(link string) string {
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Sprintf("the device link %q is not an HTTPS URL", link)
	}
	host := strings.ToLower(u.Hostname())
	as := r.co.AuthorizationServer
	var allowed []string
	for _, raw := range append([]string{as.Issuer}, as.ProtectedResources...) {
		if au, err := url.Parse(raw); err == nil && au.Hostname() != "" {
			allowed = append(allowed, strings.ToLower(au.Hostname()))
		}
	}
	for _, a := range allowed {
		if host == a || strings.HasSuffix(host, "."+a) {
			return ""
		}
	}
	return fmt.Sprintf("the device link %s is on %s, neither the issuer's host nor a protected resource's (%s) nor a subdomain of one", link, host, strings.Join(allowed, ", "))
}

// needSignedIn says why the signed-in probes cannot run ("" when signed in).
func (r *run) needSignedIn() string {
	if r.tok != nil && r.tok.access != "" {
		return ""
	}
	if r.oa.signedOut != "" {
		return r.oa.signedOut
	}
	return "the run is not signed in"
}

// signIn is one Direct Sign-In in the User's browser (ActionSignIn).
func (r *run) signIn(ctx context.Context) {
	wide, none := [2]string{probeScopeWide, inspect.RuleOAuthScopeWider}, [2]string{probeScopeNone, inspect.RuleOAuthNoScope}
	defer r.issProbes()
	defer r.pkceSignIn(ctx) // before issProbes: its redirect back carries iss too
	if r.oa.signedOut != "" {
		r.skipAll(r.oa.signedOut, wide, none)
		return
	}
	as := r.co.AuthorizationServer
	why := ""
	switch {
	case !r.cfg.allows(ActionSignIn):
		why = "signing in is an action: allow it with --allow-actions " + ActionSignIn + " (the User signs in once in their browser)"
	case r.cfg.SignIn == nil:
		why = "no browser to sign in with"
	case as.AuthorizationEndpoint == "" || !slices.Contains(as.GrantTypesSupported, "authorization_code"):
		why = "the issuer offers no Direct Sign-In"
	case r.tokenEndpointDead():
		why = "the token endpoint did not answer in time"
	}
	if why != "" {
		r.oa.signedOut = why
		r.skipAll(why, wide, none)
		return
	}
	q, err := r.browserSignIn(ctx, true)
	if err != nil {
		r.oa.signedOut = "the sign-in did not finish: " + err.Error()
		r.skipAll(r.oa.signedOut, wide, none)
		return
	}
	r.sawIss("the sign-in's redirect back", q.back)
	if e := q.back.Get("error"); e != "" {
		r.oa.signedOut = fmt.Sprintf("the sign-in ended with error=%s (%s)", e, trim(q.back.Get("error_description")))
		r.skipAll(r.oa.signedOut, wide, none)
		return
	}
	a := r.tokenRequest(ctx, url.Values{"grant_type": {"authorization_code"}, "code": {q.back.Get("code")}, "redirect_uri": {q.redirectURI},
		"code_verifier": {q.verifier}}, true)
	var t struct {
		AccessToken  string  `json:"access_token"`
		TokenType    string  `json:"token_type"`
		RefreshToken string  `json:"refresh_token"`
		Scope        *string `json:"scope"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &t) != nil || t.AccessToken == "" {
		r.oa.signedOut = "the code from the sign-in was not exchanged for tokens: " + a.words()
		r.skipAll(r.oa.signedOut, wide, none)
		return
	}
	asked := r.scopes()
	granted := asked
	if t.Scope != nil {
		granted = strings.Fields(*t.Scope)
	}
	var extra []string
	for _, g := range granted {
		if !slices.Contains(asked, g) {
			extra = append(extra, g)
		}
	}
	if len(extra) > 0 {
		r.add(probeScopeWide, inspect.RuleOAuthScopeWider, Fail, fmt.Sprintf("the token response grants %q, which the sign-in did not ask for (it asked for %q); the User approved only what was asked", strings.Join(extra, " "), strings.Join(asked, " ")))
	} else {
		r.add(probeScopeWide, inspect.RuleOAuthScopeWider, Pass, fmt.Sprintf("granted %q of %q", strings.Join(granted, " "), strings.Join(asked, " ")))
	}
	if len(granted) == 0 {
		r.add(probeScopeNone, inspect.RuleOAuthNoScope, Fail, "the token response grants no scope (\"scope\": \"\"); a Poppy sign-in that grants none ends as a decline (spec 4.7), so the run continues signed out")
		r.oa.signedOut = "the sign-in granted no scope"
		r.tok = &tokens{refresh: t.RefreshToken} // no access: only revoked at the end
		return
	}
	r.add(probeScopeNone, inspect.RuleOAuthNoScope, Pass, "granted "+strings.Join(granted, " "))
	r.tok = &tokens{access: t.AccessToken, refresh: t.RefreshToken, typ: t.TokenType, scopes: granted}
	r.resourceDPoPProbe(ctx)
}

// resourceDPoPProbe makes one signed-in request to ProbeURL with a DPoP-bound token: a
// use_dpop_nonce challenge is noted by do (RFC 9449 §9).
func (r *run) resourceDPoPProbe(ctx context.Context) {
	switch {
	case r.dp == nil || !strings.EqualFold(r.tok.typ, "DPoP"):
		r.add(probeDPoPRes, inspect.RuleResourceDPoPNonce, Skip, "the sign-in's access token is not DPoP-bound")
		return
	case r.cfg.ProbeURL == "":
		r.add(probeDPoPRes, inspect.RuleResourceDPoPNonce, Skip, "no --probe-url to send a signed-in request to")
		return
	}
	a := r.do(ctx, call{method: http.MethodGet, url: r.cfg.ProbeURL, signed: true, token: true})
	r.mu.Lock()
	noted := r.notes[inspect.RuleResourceDPoPNonce]
	r.mu.Unlock()
	if !noted {
		r.add(probeDPoPRes, inspect.RuleResourceDPoPNonce, Pass, "a DPoP proof without a nonce was accepted at "+r.cfg.ProbeURL+": "+a.words())
	}
}

// signInResult is what came back to the run's redirect URI.
type signInResult struct {
	back                  url.Values
	redirectURI, verifier string
}

// browserSignIn opens the authorization URL in the User's browser (Config.SignIn), with PKCE
// when withPKCE, and waits for the redirect back to a loopback listener of its own (RFC 8252
// §7.3), at most SignInTimeout.
func (r *run) browserSignIn(ctx context.Context, withPKCE bool) (*signInResult, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on loopback for the redirect back: %w", err)
	}
	defer ln.Close()
	redirectURI := loopbackURI(ln.Addr().(*net.TCPAddr).Port, "")
	state := identity.NewID(16)
	verifier, challenge := pkce()
	if !withPKCE {
		verifier, challenge = "", ""
	}
	got := make(chan url.Values, 1)
	path := ""
	if u, err := url.Parse(redirectURI); err == nil {
		path = u.Path
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != path || req.URL.Query().Get("state") != state {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintln(w, "poppydesk check received the sign-in; you can close this page.")
		select {
		case got <- req.URL.Query():
		default:
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	wctx, cancel := context.WithTimeout(ctx, r.cfg.SignInTimeout)
	defer cancel()
	if err := r.cfg.SignIn(wctx, r.authURL(redirectURI, state, challenge)); err != nil {
		return nil, fmt.Errorf("opening the browser: %w", err)
	}
	select {
	case q := <-got:
		return &signInResult{back: q, redirectURI: redirectURI, verifier: verifier}, nil
	case <-wctx.Done():
		return nil, fmt.Errorf("no redirect back within %s", r.cfg.SignInTimeout)
	}
}

// refreshProbes refresh once (spec 4.4): the refresh token just issued must be accepted, and a
// new one should come back (rotation); without one, the old one must keep working.
func (r *run) refreshProbes(ctx context.Context) {
	rot, ok := [2]string{probeRotation, inspect.RuleOAuthNoRotation}, [2]string{probeRefreshOK, inspect.RuleOAuthRefreshRevoked}
	switch {
	case r.tok == nil || r.tok.refresh == "":
		why := r.needSignedIn()
		if r.tok != nil {
			why = "the sign-in returned no refresh token"
		}
		r.skipAll(why, rot, ok)
		return
	case r.tok.access == "":
		r.skipAll(r.needSignedIn(), rot, ok)
		return
	}
	a := r.tokenRequest(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.tok.refresh}}, true)
	var t struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &t) != nil || t.AccessToken == "" {
		if a.code == "invalid_grant" {
			r.add(probeRefreshOK, inspect.RuleOAuthRefreshRevoked, Fail, "the refresh token the sign-in had just issued got invalid_grant: the sign-in is lost, and a Personal Agent continues signed out until the User signs in again")
			r.tok.refresh = ""
		} else {
			r.add(probeRefreshOK, inspect.RuleOAuthRefreshRevoked, Skip, "the refresh got "+a.words())
		}
		r.add(probeRotation, inspect.RuleOAuthNoRotation, Skip, "the refresh did not succeed")
		return
	}
	r.add(probeRefreshOK, inspect.RuleOAuthRefreshRevoked, Pass, "the refresh token was accepted")
	if t.RefreshToken != "" {
		r.add(probeRotation, inspect.RuleOAuthNoRotation, Pass, "the refresh returned a new refresh token")
		r.tok.refresh = t.RefreshToken
		return
	}
	again := r.tokenRequest(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.tok.refresh}}, true)
	old := "and the old one keeps working (RFC 6749 §6: the client keeps it)"
	if again.status != http.StatusOK {
		old = "and the old one no longer works (" + again.words() + "): the sign-in is lost after one refresh"
	}
	r.add(probeRotation, inspect.RuleOAuthNoRotation, Fail, "the refresh returned no new refresh token, "+old+"; rotation is recommended (RFC 9700 §4.14)")
}

// revoke revokes the run's refresh token (spec 4.6), so the check leaves no sign-in behind.
func (r *run) revoke(ctx context.Context) {
	if r.tok != nil {
		r.revokeToken(ctx, r.tok.refresh)
	}
}

// revokeToken revokes a refresh token of the run (spec 4.6).
func (r *run) revokeToken(ctx context.Context, refresh string) {
	if refresh == "" || r.co.AuthorizationServer == nil || r.co.AuthorizationServer.RevocationEndpoint == "" || r.tokenEndpointDead() {
		return
	}
	ca, err := r.cfg.Agent.ClientAssertion(ctx, r.co.AuthorizationServer.Issuer)
	if err != nil {
		return
	}
	v := url.Values{"token": {refresh}, "token_type_hint": {"refresh_token"}, "client_id": {r.cfg.Agent.ClientID()},
		"client_assertion_type": {assertionType}, "client_assertion": {ca}}
	r.do(ctx, call{method: http.MethodPost, url: r.co.AuthorizationServer.RevocationEndpoint, body: []byte(v.Encode()), contentType: "application/x-www-form-urlencoded", noRetry: true})
}

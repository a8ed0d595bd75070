package conformance

// The signed-in request probes (spec 5.6, 7) at Config.SignedInURL, a safe GET endpoint that
// requires the access token, once the run is signed in (ActionSignIn):
//
//   - the correct signed-in request, with no cookie, must be accepted (spec 5.6: Companies MUST
//     accept the Session header and access token without requiring cookies); the same judgement
//     of the correct signed-out request at ProbeURL is in session.go (cookieProbe below);
//   - precondition for the rest: the same request without the access token is refused, so the
//     endpoint shows whether a token was taken;
//   - the access token in the URL's access_token query parameter (RFC 6750 §2.3) instead of
//     Authorization, everything else as in the correct request (the Session JWT's ath, the DPoP
//     proof), must be refused (spec 5.6: Companies MUST NOT accept tokens from a URL);
//   - after the refresh probes, a refresh with resource set to an MCP server's url (RFC 8707
//     §2.2, spec 7) gives a token for that server; sent to SignedInURL, it must be refused (spec
//     7: it works only at the MCP server, and the Company MUST reject it elsewhere).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

const (
	probeCookiesOut = "request: the Session header is accepted without cookies"
	probeCookiesIn  = "request: the access token is accepted without cookies"
	probeTokenQuery = "request: an access token in the URL is refused"
	probeMCPToken   = "mcp: a token for the MCP server is refused elsewhere"
)

// cookieProbe judges the answer first that a correct request, described by what, got without
// any cookie (spec 5.6). Accepted passes. Refused with a Set-Cookie, the request is sent again
// with those cookies (resend): accepted then, the Company requires cookies and the probe fails
// with its first answer; refused again, or refused without a cookie, the refusal is not about
// cookies and the probe is skipped.
func (r *run) cookieProbe(probe, what string, first answer, resend func(cookie string) answer) {
	rule := inspect.RuleNoCookies
	if first.status/100 == 2 {
		r.addSaid(probe, rule, Pass, what+", with no cookie, got "+first.words(), first.said())
		return
	}
	cookies := (&http.Response{Header: first.header}).Cookies()
	if first.status == 0 || len(cookies) == 0 {
		r.add(probe, rule, Skip, fmt.Sprintf("%s got %s and set no cookie, so whether the Company requires cookies does not show", what, first.words()))
		return
	}
	var pairs, names []string
	for _, c := range cookies {
		pairs = append(pairs, (&http.Cookie{Name: c.Name, Value: c.Value}).String())
		names = append(names, c.Name)
	}
	again := resend(strings.Join(pairs, "; "))
	if again.status/100 == 2 {
		r.addSaid(probe, rule, Fail, fmt.Sprintf("%s, with no cookie, got %s and set the cookie %s; sent again with it, it got %s: the Company requires a cookie beside the Session header and access token; a Company accepts them without cookies (spec 5.6), which Personal Agents do not keep", what, first.words(), strings.Join(names, ", "), again.words()), first.said())
		return
	}
	r.addSaid(probe, rule, Skip, fmt.Sprintf("%s got %s without a cookie and %s with the cookie it set (%s): refused either way, so the refusal is not about cookies", what, first.words(), again.words(), strings.Join(names, ", ")), again.said())
}

// signedInProbes: the correct signed-in request without cookies, then the access token in the
// URL (this file's doc). It sets signedIn for mcpTokenProbe, or signedInSkip.
func (r *run) signedInProbes(ctx context.Context) {
	cookies, query := [2]string{probeCookiesIn, inspect.RuleNoCookies}, [2]string{probeTokenQuery, inspect.RuleTokenInURL}
	why := r.needSignedIn()
	var su *url.URL
	switch {
	case why != "":
	case r.dlg == nil:
		why = "could not get a delegation from the identity"
	case r.cfg.SignedInURL == "":
		why = "name a safe GET endpoint that requires the access token with --signed-in-url, such as one that lists the account's orders"
	default:
		u, err := url.Parse(r.cfg.SignedInURL)
		if err != nil || u.Scheme != "https" || !r.companyHost(u.Host) {
			why = fmt.Sprintf("--signed-in-url %s is not an HTTPS URL on the Company's own hosts; the access token goes nowhere else", r.cfg.SignedInURL)
		}
		su = u
	}
	if why != "" {
		r.signedInSkip = why
		r.skipAll(why, cookies, query)
		return
	}
	correct := call{method: http.MethodGet, url: su.String(), signed: true, token: true}
	a := r.do(ctx, correct)
	what := "the correct signed-in request to --signed-in-url " + su.String()
	r.cookieProbe(probeCookiesIn, what, a, func(cookie string) answer {
		c := correct
		c.header = http.Header{"Cookie": {cookie}}
		return r.do(ctx, c)
	})
	if a.status/100 != 2 {
		r.signedInSkip = fmt.Sprintf("%s got %s, so a refusal of a token elsewhere would prove nothing; name with --signed-in-url a safe GET endpoint that answers a correct signed-in request with 2xx", what, a.words())
		r.skipAll(r.signedInSkip, query)
		return
	}
	bare := r.do(ctx, call{method: http.MethodGet, url: su.String(), signed: true})
	if bare.status/100 == 2 {
		r.signedInSkip = fmt.Sprintf("--signed-in-url %s answered the signed-in request without its access token too (%s): it does not require the token, so whether it takes a token from elsewhere does not show; name an endpoint that refuses a request without the access token, such as one that lists the account's orders", su, bare.words())
		r.skipAll(r.signedInSkip, query)
		return
	}
	r.signedIn = su
	// Spec 5.6: Personal Agents MUST NOT send tokens or Session JWTs in a URL, and Companies
	// MUST NOT accept them from one.
	in := *su
	q := in.Query()
	q.Set("access_token", r.tok.access)
	in.RawQuery = q.Encode()
	b := r.do(ctx, call{method: http.MethodGet, url: in.String(), signed: true, token: true, tokenInQuery: true})
	if b.status/100 == 2 {
		r.addSaid(probeTokenQuery, inspect.RuleTokenInURL, Fail, fmt.Sprintf("the signed-in request to %s with its access token in the access_token query parameter instead of Authorization got %s, while the same request without the token got %s: the Company took the token from the URL; it must not accept tokens from one (spec 5.6)", su, b.words(), bare.words()), b.said())
		return
	}
	r.addSaid(probeTokenQuery, inspect.RuleTokenInURL, Pass, fmt.Sprintf("the access token in the query instead of Authorization got %s (without it: %s; with it in Authorization: %s)", b.words(), bare.words(), a.words()), b.said())
}

// mcpTokenProbe asks for a token for an MCP server (a refresh with resource, RFC 8707 §2.2) and
// sends it to SignedInURL: spec 7 says the Company MUST reject it there.
func (r *run) mcpTokenProbe(ctx context.Context) {
	p := [2]string{probeMCPToken, inspect.RuleMCPTokenElsewhere}
	switch {
	case r.signedIn == nil:
		r.skipAll(r.signedInSkip, p)
		return
	case len(r.mcpServers) == 0:
		r.skipAll("poppy.json lists no MCP server whose protected resource metadata names its url (one that takes access tokens, spec 7), so there is no token for one to send elsewhere", p)
		return
	case r.tok.refresh == "":
		r.skipAll("the sign-in's refresh token no longer works (the refresh probes say why), so no token for the MCP server can be asked for", p)
		return
	}
	mcp := r.mcpServers[0]
	a := r.tokenRequest(ctx, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.tok.refresh}, "resource": {mcp}}, true)
	var t struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &t) != nil || t.AccessToken == "" {
		r.addSaid(probeMCPToken, inspect.RuleMCPTokenElsewhere, Skip, fmt.Sprintf("a refresh with resource=%s, the MCP server's url (RFC 8707, spec 7), got %s, so check has no token for the MCP server to send elsewhere", mcp, a.words()), a.said())
		return
	}
	if t.RefreshToken != "" {
		r.tok.refresh = t.RefreshToken // revoked at the end of the run
	}
	b := r.do(ctx, call{method: http.MethodGet, url: r.signedIn.String(), signed: true, token: true, access: &tokens{access: t.AccessToken, typ: t.TokenType}})
	if b.status/100 == 2 {
		r.addSaid(probeMCPToken, inspect.RuleMCPTokenElsewhere, Fail, fmt.Sprintf("an access token issued with resource=%s, the MCP server's url, was accepted at --signed-in-url %s: %s; a token for an MCP server works only there, and the Company must reject it elsewhere (spec 7)", mcp, r.signedIn, b.words()), b.said())
		return
	}
	r.addSaid(probeMCPToken, inspect.RuleMCPTokenElsewhere, Pass, fmt.Sprintf("the token for %s got %s at %s", mcp, b.words(), r.signedIn), b.said())
}

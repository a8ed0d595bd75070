package conformance

// The browser-session probes (spec 6): the page's headers and join cookie (step 1), the
// authorization of a code fresh from the page (step 2), the submission from the same "browser"
// (step 3: the probe's requests carry the cookies the page set, as that browser would), and a
// second submission of the same code. A signed-in run also authorizes a code with its access
// token. The probe's requests are a browser's only in what it sends; a join it makes belongs to
// the run's own Session, signed out, and nothing else.

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

const (
	joinHeaders    = "join: page headers"
	joinCookie     = "join: the page sets its join cookie"
	joinFresh      = "join: a code fresh from the page is authorized"
	joinOther      = "join: the page's cookie belongs to its code"
	joinOnce       = "join: an authorized code is accepted once"
	joinWithAToken = "join: authorize accepts the access token"
	joinOnlyCookie = "join: the page sets no cookie but the join cookie, authorize none"
)

var (
	tagRE  = regexp.MustCompile(`(?is)<(input|form)\b([^>]*)>`)
	attrRE = regexp.MustCompile(`(?is)([a-z][a-z0-9_-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))`)
)

// joinPage is what step 1 gave: the code, where the form posts, and the cookies it set.
type joinPage struct {
	code, action, method string
	cookies              []*http.Cookie
	header               http.Header
}

// loadJoinPage is step 1: a GET of the endpoint, as a top-level navigation would send it.
func (r *run) loadJoinPage(ctx context.Context, endpoint string) (*joinPage, answer) {
	a := r.do(ctx, call{method: http.MethodGet, url: endpoint, accept: "text/html", header: http.Header{"Sec-Fetch-Dest": {"document"}, "Sec-Fetch-Mode": {"navigate"}}})
	if a.status != http.StatusOK {
		return nil, a
	}
	p := &joinPage{header: a.header, cookies: (&http.Response{Header: a.header}).Cookies()}
	forms := 0
	for _, m := range tagRE.FindAllStringSubmatch(string(a.body), -1) {
		attrs := map[string]string{}
		for _, am := range attrRE.FindAllStringSubmatch(m[2], -1) {
			attrs[strings.ToLower(am[1])] = html.UnescapeString(am[2] + am[3] + am[4])
		}
		switch strings.ToLower(m[1]) {
		case "form":
			forms++
			p.action, p.method = attrs["action"], strings.ToLower(attrs["method"])
		case "input":
			if attrs["name"] == "code" && strings.EqualFold(attrs["type"], "hidden") {
				p.code = attrs["value"]
			}
		}
	}
	if forms != 1 {
		p.code = ""
	}
	return p, a
}

// cookieHeader is the Cookie header the browser that loaded the page would send.
func (p *joinPage) cookieHeader() string {
	var parts []string
	for _, c := range p.cookies {
		if c.Value != "" && c.MaxAge >= 0 {
			parts = append(parts, c.Name+"="+c.Value)
		}
	}
	return strings.Join(parts, "; ")
}

// authorize is step 2 for the page's code, in the run's Session, with the access token when
// token is set.
func (r *run) authorizeCode(ctx context.Context, endpoint, code string, token bool) answer {
	body, _ := json.Marshal(map[string]string{"code": code})
	return r.do(ctx, call{method: http.MethodPost, url: strings.TrimSuffix(endpoint, "/") + "/authorize", body: body,
		contentType: "application/json", signed: true, token: token})
}

// submit is step 3: the form posted by the browser that loaded the page.
func (r *run) submit(ctx context.Context, p *joinPage, endpoint string) answer {
	h := http.Header{"Origin": {originOf(endpoint)}, "Sec-Fetch-Site": {"same-origin"}}
	if c := p.cookieHeader(); c != "" {
		h.Set("Cookie", c)
	}
	return r.do(ctx, call{method: http.MethodPost, url: endpoint, body: []byte(url.Values{"code": {p.code}}.Encode()),
		contentType: "application/x-www-form-urlencoded", accept: "text/html", header: h, noRetry: true})
}

func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// joinCookieProblems checks the cookies the page set (spec 6 step 1): one that only this host
// can set (__Host- prefix), Secure, and not sent with a form from another site (SameSite Strict
// or Lax, stated).
func joinCookieProblems(cs []*http.Cookie) string {
	if len(cs) == 0 {
		return "the page set no cookie, so nothing ties its code to the browser that loaded it; any browser could submit the code"
	}
	var problems []string
	for _, c := range cs {
		var p []string
		if !strings.HasPrefix(c.Name, "__Host-") {
			p = append(p, "has no __Host- prefix, so other hosts of the domain can set it")
		}
		if !c.Secure {
			p = append(p, "is not Secure")
		}
		if c.SameSite != http.SameSiteStrictMode && c.SameSite != http.SameSiteLaxMode {
			p = append(p, "has no SameSite=Strict (or Lax), so a form submitted from another site may carry it")
		}
		if len(p) == 0 {
			return ""
		}
		problems = append(problems, "the cookie "+c.Name+" "+strings.Join(p, ", "))
	}
	return strings.Join(problems, "; ")
}

func (r *run) joinProbes(ctx context.Context) {
	all := [][2]string{{joinHeaders, inspect.RuleJoinPageHeaders}, {joinCookie, inspect.RuleJoinCookie}, {joinFresh, inspect.RuleJoinCodeExpired},
		{joinOther, inspect.RuleJoinOtherBrowser}, {joinOnce, inspect.RuleJoinCodeUsed}}
	why := r.need(false)
	if why == "" && (r.co.Channels.Web == nil || r.co.Channels.Web.BrowserSessionEndpoint == "") {
		why = "poppy.json lists no web.browser_session_endpoint"
	}
	only := [2]string{joinOnlyCookie, inspect.RuleJoinOnlyCookie}
	if why != "" {
		r.skipAll(why, append(all, only)...)
		return
	}
	ep := r.co.Channels.Web.BrowserSessionEndpoint
	p, a := r.loadJoinPage(ctx, ep)
	if p == nil {
		r.skipAll("the browser-session page answered "+a.words()+", not 200 with a page", append(all, only)...)
		return
	}
	// Spec 6: loading the page changes no cookie but the join cookie, and a Session cookie is
	// set only in step 3; authorize's answer (step 2) is read below when the run gets there.
	var authorized *answer
	defer func() { r.onlyJoinCookie(ep, p.cookies, authorized) }()
	if missing := inspect.JoinPageProblems(p.header); len(missing) > 0 {
		r.add(joinHeaders, inspect.RuleJoinPageHeaders, Fail, "the browser-session page "+ep+" was served "+strings.Join(missing, "; "))
	} else {
		r.add(joinHeaders, inspect.RuleJoinPageHeaders, Pass, "Cache-Control no-store, frame-ancestors, Cross-Origin-Opener-Policy")
	}
	cookieBad := joinCookieProblems(p.cookies)
	r.check(joinCookie, inspect.RuleJoinCookie, cookieBad, "the page set "+cookieNames(p.cookies))
	rest := all[2:]
	switch {
	case p.code == "":
		r.skipAll("the page has no single form with a hidden field named code (spec 6 step 1)", rest...)
		return
	case p.action != ep || p.method != "post":
		r.skipAll(fmt.Sprintf("the page's form posts to %q with method %q, not to the endpoint with POST (spec 6 step 1)", p.action, p.method), rest...)
		return
	case r.dlg == nil:
		r.skipAll("authorizing a code needs the Session header: "+r.need(true), rest...)
		return
	}
	a = r.authorizeCode(ctx, ep, p.code, false)
	step2 := a // a is step 3's answer below
	authorized = &step2
	if a.status != http.StatusNoContent && a.status/100 != 2 {
		bad := fmt.Sprintf("a code the page had just given was refused at %s/authorize: %s; a code must be valid for the join it was issued for", ep, a.words())
		if a.code == "invalid_session" || a.status == 0 || a.status >= 500 {
			r.skipAll("authorizing the page's code failed for another reason: "+a.words(), rest...)
			return
		}
		r.add(joinFresh, inspect.RuleJoinCodeExpired, Fail, bad)
		r.skipAll("the code was not authorized", rest[1:]...)
		return
	}
	r.add(joinFresh, inspect.RuleJoinCodeExpired, Pass, a.words())
	if cookieBad != "" && len(p.cookies) == 0 {
		r.skipAll("the page set no join cookie (see "+joinCookie+")", rest[1:]...)
		return
	}
	a = r.submit(ctx, p, ep)
	if a.status/100 != 3 {
		text := pageText(a.body)
		rule, probe := inspect.RuleJoinCodeUsed, joinOnce
		low := strings.ToLower(text)
		for _, w := range []string{"another browser", "other browser", "belongs to", "does not match", "doesn't match", "mismatch"} {
			if strings.Contains(low, w) {
				rule, probe = inspect.RuleJoinOtherBrowser, joinOther
			}
		}
		ev := fmt.Sprintf("the browser that loaded the page submitted its authorized code with the cookies the page set, and got %s (%q)", a.words(), trim(text))
		r.add(probe, rule, Fail, ev)
		for _, x := range rest[1:] {
			if x[0] != probe {
				r.add(x[0], x[1], Skip, "the submission failed (see "+probe+")")
			}
		}
		return
	}
	r.add(joinOther, inspect.RuleJoinOtherBrowser, Pass, "the page's cookie and its code were accepted together")
	again := r.submit(ctx, p, ep)
	if again.status/100 == 3 {
		r.add(joinOnce, inspect.RuleJoinCodeUsed, Fail, fmt.Sprintf("the same code was accepted a second time (%s); each code works once (spec 6 step 3)", again.words()))
		return
	}
	r.add(joinOnce, inspect.RuleJoinCodeUsed, Pass, fmt.Sprintf("accepted once (%s to %s), refused the second time (%s)", a.words(), a.header.Get("Location"), again.words()))
}

// joinTokenProbe authorizes a fresh code with the sign-in's access token (spec 6 step 2: the
// access token the website should act with), which the Company must accept like its APIs do.
func (r *run) joinTokenProbe(ctx context.Context) {
	why := r.needSignedIn()
	if why == "" && (r.co.Channels.Web == nil || r.co.Channels.Web.BrowserSessionEndpoint == "") {
		why = "poppy.json lists no web.browser_session_endpoint"
	}
	if why != "" {
		r.add(joinWithAToken, inspect.RuleJoinTokenRefused, Skip, why)
		return
	}
	ep := r.co.Channels.Web.BrowserSessionEndpoint
	p, a := r.loadJoinPage(ctx, ep)
	if p == nil || p.code == "" {
		r.add(joinWithAToken, inspect.RuleJoinTokenRefused, Skip, "the browser-session page gave no code: "+a.words())
		return
	}
	a = r.authorizeCode(ctx, ep, p.code, true)
	switch {
	case a.status == http.StatusUnauthorized && strings.Contains(a.header.Get("WWW-Authenticate"), "invalid_token"):
		r.add(joinWithAToken, inspect.RuleJoinTokenRefused, Fail, fmt.Sprintf("%s/authorize refused the access token the sign-in just issued with invalid_token (%s), so the browser can only join signed out", ep, trim(a.header.Get("WWW-Authenticate"))))
	case a.status/100 == 2:
		r.add(joinWithAToken, inspect.RuleJoinTokenRefused, Pass, a.words())
	default:
		r.add(joinWithAToken, inspect.RuleJoinTokenRefused, Skip, "authorizing with the access token got "+a.words())
	}
}

// onlyJoinCookie judges the cookies set before step 3 (spec 6): the page sets one cookie, the
// join cookie, and nothing else (loading it MUST NOT start, end or change a Session or the
// browser's other cookies), and authorize's answer, when the run got one, sets none (the
// Session cookie MUST be set only in step 3).
func (r *run) onlyJoinCookie(ep string, page []*http.Cookie, authorized *answer) {
	var bad []string
	if len(page) > 1 {
		bad = append(bad, fmt.Sprintf("loading the page set %d cookies (%s); it may set only the join cookie", len(page), cookieNames(page)))
	}
	good := "the page set " + cookieNames(page)
	if authorized != nil {
		if cs := (&http.Response{Header: authorized.header}).Cookies(); len(cs) > 0 {
			bad = append(bad, fmt.Sprintf("%s/authorize (step 2) answered with Set-Cookie %s", ep, cookieNames(cs)))
		}
		good += ", authorize none"
	}
	r.check(joinOnlyCookie, inspect.RuleJoinOnlyCookie, joinBad(bad, "a Session starts, and its cookie is set, only when the browser submits its code (spec 6 step 3)"), good)
}

func cookieNames(cs []*http.Cookie) string {
	var n []string
	for _, c := range cs {
		n = append(n, c.Name)
	}
	return strings.Join(n, ", ")
}

var tagsRE = regexp.MustCompile(`(?s)<[^>]*>`)

// pageText is an error page's visible text, for evidence.
func pageText(b []byte) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagsRE.ReplaceAllString(string(b), " "))), " ")
}

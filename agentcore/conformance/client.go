package conformance

// The probes' own HTTP client: it sends what the probe asks for and nothing it doesn't, with the
// Session header, the access token, a DPoP proof and the extensions as the probe chooses, and
// returns the answer as it came, so a probe can send what a correct Personal Agent never would
// and see what a Company answers to it. Every request is bounded by Config.Timeout and goes
// only to the Company's own hosts (the transport's policy, and each probe's choice of URL).

import (
	"bytes"
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
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// probeSession is one Session of the run: its sid and User ID.
type probeSession struct{ sid, sub string }

func newProbeSession() probeSession {
	return probeSession{sid: identity.NewID(16), sub: "usr_" + identity.NewID(12)}
}

// tokens are the sign-in's tokens.
type tokens struct {
	access, refresh, typ string
	scopes               []string
}

// dpopKey is the run's DPoP key (RFC 9449) and the nonces the Company asked for, by origin.
type dpopKey struct {
	key    *ecdsa.PrivateKey
	nonces map[string]string
}

func newDPoPKey() (*dpopKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &dpopKey{key: k, nonces: map[string]string{}}, nil
}

// proof is a DPoP proof for method and u (oauth.DPoPProof, RFC 9449 §4.2), with ath when token
// is set and the origin's nonce when the Company gave one; "" when it cannot be signed.
func (d *dpopKey) proof(method string, u *url.URL, token string, now time.Time) string {
	p, err := oauth.DPoPProof(d.key, method, u, token, d.nonces[u.Scheme+"://"+u.Host], now)
	if err != nil {
		return ""
	}
	return p
}

// sessionFor is the run's flow Session for requests with Poppy-Extensions ext.
func (r *run) sessionFor(ext string) probeSession {
	if ext != "" {
		return r.flowExt
	}
	return r.flow
}

// call is one request of a probe.
type call struct {
	method, url string
	body        []byte
	contentType string
	// signed sends a Session header of the run's flows: the Session without extensions, or,
	// when extensions is set, the one that declares them (spec 3.4: a Session keeps its
	// Poppy-Extensions). version is Poppy-Version ("": the Company's chosen version when
	// signed).
	signed  bool
	version string
	// session signs in this Session instead of the run's flow Sessions (signed only).
	session *probeSession
	// token sends the sign-in's access token (with its DPoP proof when bound), or access when
	// set; tokenInQuery leaves it out of Authorization (the probe puts it in the URL's query,
	// RFC 6750 §2.3) and sends the rest as before: the Session JWT's ath, the DPoP proof.
	token        bool
	access       *tokens
	tokenInQuery bool
	// extensions is Poppy-Extensions ("": none); approval is Poppy-Approval.
	extensions, approval string
	accept               string
	header               http.Header
	// noRetry sends once even after a 429 or a DPoP nonce challenge.
	noRetry bool
}

// answer is what came back: the status (0 when nothing did: err says why), the header, the
// body (at most 1 MiB), and the error code and error_description of a JSON body (spec 7, RFC
// 6749 §5.2) or, without one, of the WWW-Authenticate challenge (RFC 6750 §3).
type answer struct {
	status int
	header http.Header
	body   []byte
	code   string
	desc   string
	err    error
}

// said is what the Company said in a, for a Result beside check's reading (nil when nothing
// came back).
func (a answer) said() *Said {
	if a.status == 0 {
		return nil
	}
	return &Said{Status: a.status, Error: a.code, Description: a.desc}
}

var challengeParamRE = regexp.MustCompile(`(error|error_description)="([^"]*)"`)

// readError fills code and desc from a's JSON body or its WWW-Authenticate challenge.
func (a *answer) readError() {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(a.body, &e) == nil {
		a.code, a.desc = e.Error, e.Description
	}
	if a.code != "" || a.header == nil {
		return
	}
	for _, m := range challengeParamRE.FindAllStringSubmatch(a.header.Get("WWW-Authenticate"), -1) {
		if m[1] == "error" {
			a.code = m[2]
		} else {
			a.desc = m[2]
		}
	}
}

func (a answer) timedOut() bool { return errors.Is(a.err, transport.ErrTimeout) }

// words is the answer in a few words for evidence: "HTTP 400 invalid_session: …".
func (a answer) words() string {
	if a.status == 0 {
		return "no answer: " + errText(a.err)
	}
	s := "HTTP " + strconv.Itoa(a.status)
	if a.code != "" {
		s += " " + a.code
		if a.desc != "" {
			s += fmt.Sprintf(" (the Company said: %q)", trim(a.desc))
		}
	}
	if b := strings.TrimSpace(string(a.body)); b != "" && a.code == "" {
		if strings.HasPrefix(b, "<") {
			b = pageText(a.body)
		}
		s += ": " + trim(b)
	}
	return s
}

func errText(err error) string {
	if err == nil {
		return "nothing"
	}
	return err.Error()
}

func trim(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// do sends c, retrying once after a DPoP nonce challenge and up to twice after a 429 (waiting
// Retry-After, at most 10 s), unless c.noRetry.
func (r *run) do(ctx context.Context, c call) answer {
	var a answer
	for attempt := 0; attempt < 4; attempt++ {
		a = r.once(ctx, c)
		if c.noRetry {
			return a
		}
		switch {
		case a.status == http.StatusTooManyRequests && attempt < 2:
			ra := a.header.Get("Retry-After")
			r.mu.Lock()
			r.limited = append(r.limited, fmt.Sprintf("%s %s got HTTP 429 (Retry-After: %q)", c.method, c.url, ra))
			r.mu.Unlock()
			wait := time.Second
			if n, err := strconv.Atoi(ra); err == nil && n >= 0 {
				wait = time.Duration(min(n, 10)) * time.Second
			}
			if r.cfg.Sleep(ctx, wait) != nil {
				return a
			}
		case r.dp != nil && a.status/100 == 4 && a.header.Get("DPoP-Nonce") != "" && isNonceChallenge(a) && attempt < 3:
			u, _ := url.Parse(c.url)
			origin := u.Scheme + "://" + u.Host
			if r.dp.nonces[origin] == a.header.Get("DPoP-Nonce") {
				return a
			}
			r.dp.nonces[origin] = a.header.Get("DPoP-Nonce")
			rule, probe := inspect.RuleResourceDPoPNonce, "dpop: resource nonces"
			if !c.token {
				rule, probe = inspect.RuleOAuthDPoPNonce, "oauth: token endpoint DPoP nonce"
			}
			r.noteOnce(probe, rule, fmt.Sprintf("%s %s answered use_dpop_nonce with a DPoP-Nonce: every DPoP proof there needs the Company's nonce, one more round trip; the request was sent again with it", c.method, redactURL(c.url)))
		default:
			return a
		}
	}
	return a
}

// isNonceChallenge reports a use_dpop_nonce error, in WWW-Authenticate (a resource) or in the
// JSON body (the token endpoint).
func isNonceChallenge(a answer) bool {
	return a.code == "use_dpop_nonce" || strings.Contains(a.header.Get("WWW-Authenticate"), "use_dpop_nonce")
}

func (r *run) once(ctx context.Context, c call) answer {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	u, err := url.Parse(c.url)
	if err != nil || u.Scheme != "https" {
		return answer{err: fmt.Errorf("%q is not an HTTPS URL", c.url)}
	}
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(inspect.WithCause(ctx, inspect.Cause{Kind: inspect.CauseCheck, Name: "poppydesk check"}), c.method, c.url, body)
	if err != nil {
		return answer{err: err}
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	if c.accept != "" {
		req.Header.Set("Accept", c.accept)
	} else if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	token := ""
	if t := c.access; c.token && (t != nil || r.tok != nil) {
		if t == nil {
			t = r.tok
		}
		token = t.access
		scheme := "Bearer"
		if strings.EqualFold(t.typ, "DPoP") && r.dp != nil {
			scheme = "DPoP"
			req.Header.Set("DPoP", r.dp.proof(c.method, u, token, r.now()))
		}
		if !c.tokenInQuery {
			req.Header.Set("Authorization", scheme+" "+token)
		}
	}
	if c.signed && r.dlg != nil {
		ps := r.sessionFor(c.extensions)
		if c.session != nil {
			ps = *c.session
		}
		cl := r.claimsIn(ps, c.method, u)
		if token != "" {
			sum := sha256.Sum256([]byte(token))
			cl.Ath = base64.RawURLEncoding.EncodeToString(sum[:])
		}
		req.Header.Set(headers.Session, r.dlg.sign(cl, sessionHeader()))
		v := c.version
		if v == "" {
			v = r.co.Version
		}
		req.Header.Set(headers.Version, v)
	} else if c.version != "" {
		req.Header.Set(headers.Version, c.version)
	}
	if c.extensions != "" {
		req.Header.Set(headers.Extensions, c.extensions)
	}
	if c.approval != "" {
		req.Header.Set(headers.Approval, c.approval)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			err = &transport.TimeoutError{URL: redactURL(c.url), Limit: r.cfg.Timeout}
		}
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := answer{status: resp.StatusCode, header: resp.Header, body: b}
	if err != nil && ctx.Err() != nil {
		a.err = &transport.TimeoutError{URL: redactURL(c.url), Limit: r.cfg.Timeout}
	}
	a.readError()
	return a
}

// redactURL drops the query of a URL for evidence (codes and states travel there).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL)"
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// form posts an application/x-www-form-urlencoded body (the OAuth endpoints), with the run's
// DPoP proof when dpop is set.
func (r *run) form(ctx context.Context, endpoint string, v url.Values, dpop bool) answer {
	c := call{method: http.MethodPost, url: endpoint, body: []byte(v.Encode()), contentType: "application/x-www-form-urlencoded"}
	if dpop && r.dp != nil {
		u, _ := url.Parse(endpoint)
		// The proof is made per attempt: do asks once for a nonce.
		return r.withProof(ctx, c, u)
	}
	return r.do(ctx, c)
}

// withProof sends c with a fresh DPoP proof per attempt (the nonce may change between them).
func (r *run) withProof(ctx context.Context, c call, u *url.URL) answer {
	var a answer
	for attempt := 0; attempt < 2; attempt++ {
		c.header = http.Header{"Dpop": {r.dp.proof(c.method, u, "", r.now())}}
		c.noRetry = true
		a = r.once(ctx, c)
		origin := u.Scheme + "://" + u.Host
		if a.status/100 == 4 && isNonceChallenge(a) && a.header.Get("DPoP-Nonce") != "" && r.dp.nonces[origin] != a.header.Get("DPoP-Nonce") {
			r.dp.nonces[origin] = a.header.Get("DPoP-Nonce")
			r.noteOnce("oauth: token endpoint DPoP nonce", inspect.RuleOAuthDPoPNonce,
				fmt.Sprintf("the token endpoint %s answered use_dpop_nonce with a DPoP-Nonce to a proof without one: every token request needs the Company's nonce, one more round trip; it was sent again with it", c.url))
			continue
		}
		return a
	}
	return a
}

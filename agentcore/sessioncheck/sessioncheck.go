package sessioncheck

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/internal/replay"
)

// Token types (spec 5.2).
const (
	SessionType    = "poppy-session+jwt"
	DelegationType = "poppy-delegation+jwt"
)

// Error codes (spec 3.4, 5.3, 5.5).
const (
	CodeInvalidSession     = "invalid_session"
	CodeSessionEnded       = "session_ended"
	CodeVersionUnsupported = "version_unsupported"
)

// DefaultMaxJTIs is Config.MaxJTIs's default: about 1,000 requests a second over the 121 s a
// jti is remembered, some 15 MiB.
const DefaultMaxJTIs = 1 << 17

// Limits on Personal Agent input.
const (
	maxJWT          = 16 << 10 // a Session JWT with its delegation is about 1 KiB
	maxDocument     = 64 << 10 // client metadata and JWKS
	maxDelegation   = 24 * time.Hour
	refetchInterval = 30 * time.Second // at most one JWKS refetch per client for an unknown kid
	negativeTTL     = 30 * time.Second // a failed metadata fetch is not retried sooner
)

// Config configures a [Verifier].
type Config struct {
	// Identifier is the Company identifier (spec 3.2); aud must equal it character for character.
	Identifier string
	// HTTPClient fetches client metadata (from iss) and JWKS. Redirects are never followed,
	// whatever its CheckRedirect says (spec 5.3, CIMD §5). Nil means a client with a 10 s timeout
	// whose dialer refuses loopback, private and link-local addresses (spec 3 "Redirects and
	// addresses"); a client given here is trusted to apply the Company's own address policy.
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Window is the iat acceptance window, either side of now (default 60 s; spec 5.3).
	Window time.Duration
	// Versions are the protocol versions served, e.g. {"0.4"} (the default; spec 3.4).
	Versions []string
	// FetchTimeout bounds each fetch of client metadata or JWKS, body included (default 10 s): a
	// Personal Agent whose server hangs gets invalid_session naming the URL, never a stuck
	// request.
	FetchTimeout time.Duration
	// MetadataTTL is how long fetched client metadata and JWKS are cached (default 5 min).
	MetadataTTL time.Duration
	// SessionIdle is how long a Session is remembered after its last request (default 24 h;
	// spec 5.5: the Company decides how long a Session lasts).
	SessionIdle time.Duration
	// EndedTTL is how long ended sids are remembered, so they get session_ended (default 7 days).
	EndedTTL time.Duration
	// MaxJTIs bounds the replay cache (spec 5.3 "Replayed JWTs"): at most this many jtis are
	// remembered (default DefaultMaxJTIs). When it is full the jti forgotten soonest goes first,
	// and every Session JWT as old as it is refused from then on, so a forgotten jti is never
	// accepted again.
	MaxJTIs int
	// RequestURL returns the URL the Personal Agent used for r, for the htu check, when the server
	// sits behind a proxy. Default: https when r.TLS is set (else http), r.Host and r.URL's path.
	RequestURL func(r *http.Request) *url.URL
	// HTUAnyScheme accepts an htu of any scheme, compared with the request URL without it. It
	// breaks spec 3 (Companies MUST reject a URL of another scheme from a Personal Agent), and
	// exists only so the reference Company can play a Company that does (its htu-any-scheme
	// fault, which `poppydesk check` must catch); a Company never sets it.
	HTUAnyScheme bool
	Logger       *slog.Logger
}

// Session is a verified Session (spec 5.3 step 4).
type Session struct {
	ClientID, SID, UserID, AgentID, Version string
	// Extensions are the declared extensions, name → version (spec 3.4).
	Extensions map[string]string
	// New is true on the request that started the Session.
	New     bool
	Started time.Time
}

// Error is a Session check failure, answered with HTTP 400 and a JSON body (spec 3.4, 5.3, 5.5).
type Error struct {
	Status      int
	Code        string // invalid_session, session_ended or version_unsupported
	Description string // for the developer (RFC 6749 §5.2 error_description)
}

func (e *Error) Error() string {
	if e.Description == "" {
		return e.Code
	}
	return e.Code + ": " + e.Description
}

// WriteJSON writes the error response: status 400, {"error": ..., "error_description": ...}.
func (e *Error) WriteJSON(w http.ResponseWriter) {
	body, _ := json.Marshal(struct {
		Error       string `json:"error"`
		Description string `json:"error_description,omitempty"`
	}{e.Code, e.Description})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	status := e.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidSession, Description: fmt.Sprintf(format, args...)}
}

// Verifier checks Session headers for one Company identifier. Safe for concurrent use.
type Verifier struct {
	cfg    Config
	client *http.Client

	mu        sync.Mutex
	clients   map[string]*clientEntry
	dlgs      map[string]*dlgEntry
	sessions  map[sessKey]*record
	ended     map[sessKey]time.Time // when it may be forgotten
	jtis      *replay.Cache         // iss\x00jti, until the JWT may be forgotten (MaxJTIs)
	lastPrune time.Time
}

// JTIs reports how many jtis the replay cache holds.
func (v *Verifier) JTIs() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.jtis.Len()
}

type sessKey struct{ clientID, sid string }

type record struct {
	userID, agentID, version, ext string
	extensions                    map[string]string
	started, lastSeen             time.Time
}

// New returns a Verifier for cfg.
func New(cfg Config) *Verifier {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Window <= 0 {
		cfg.Window = 60 * time.Second
	}
	if len(cfg.Versions) == 0 {
		cfg.Versions = []string{"0.4"}
	}
	if cfg.MetadataTTL <= 0 {
		cfg.MetadataTTL = 5 * time.Minute
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = 24 * time.Hour
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 10 * time.Second
	}
	if cfg.EndedTTL <= 0 {
		cfg.EndedTTL = 7 * 24 * time.Hour
	}
	if cfg.MaxJTIs <= 0 {
		cfg.MaxJTIs = DefaultMaxJTIs
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	base := cfg.HTTPClient
	if base == nil {
		base = defaultClient()
	}
	c := *base
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Verifier{
		cfg: cfg, client: &c,
		clients:  map[string]*clientEntry{},
		dlgs:     map[string]*dlgEntry{},
		sessions: map[sessKey]*record{},
		ended:    map[sessKey]time.Time{},
		jtis:     replay.New(cfg.MaxJTIs),
	}
}

// End ends the Session (clientID, sid): later requests with it get session_ended (spec 5.5).
func (v *Verifier) End(clientID, sid string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := sessKey{clientID, sid}
	delete(v.sessions, k)
	v.ended[k] = v.cfg.Now().Add(v.cfg.EndedTTL)
}

type jwtHeader struct {
	Typ *string `json:"typ"`
	Alg *string `json:"alg"`
	Kid *string `json:"kid"`
	Dlg *string `json:"poppy_dlg"`
}

type sessionClaims struct {
	Iss     *string         `json:"iss"`
	Aud     json.RawMessage `json:"aud"`
	Sid     *string         `json:"sid"`
	Sub     *string         `json:"sub"`
	AgentID *string         `json:"agent_id"`
	Htm     *string         `json:"htm"`
	Htu     *string         `json:"htu"`
	Iat     *json.Number    `json:"iat"`
	Jti     *string         `json:"jti"`
	Ath     *string         `json:"ath"`
}

// Verify checks the request's Poppy-Session header: the delegation (spec 5.2, in its order),
// then spec 5.3 steps 1–4, Poppy-Version and Poppy-Extensions (spec 3.4). accessToken is the
// token the request carries ("" if none); tokenClientID is the client_id it was issued to. The
// error is always an *Error.
func (v *Verifier) Verify(ctx context.Context, r *http.Request, accessToken, tokenClientID string) (*Session, error) {
	s, err := v.verify(ctx, r, accessToken, tokenClientID)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (v *Verifier) verify(ctx context.Context, r *http.Request, accessToken, tokenClientID string) (*Session, *Error) {
	vals := r.Header.Values(headers.Session)
	switch {
	case len(vals) == 0:
		return nil, invalid("the request has no Poppy-Session header (spec 5.2, 5.3)")
	case len(vals) > 1:
		return nil, invalid("the request has more than one Poppy-Session header (spec 5.2)")
	case len(vals[0]) > maxJWT:
		return nil, invalid("the Poppy-Session header is longer than %d bytes (spec 5.2)", maxJWT)
	}
	raw := strings.TrimSpace(vals[0])
	var hdr jwtHeader
	var unverified sessionClaims
	if err := decodeParts(raw, &hdr, &unverified); err != nil {
		return nil, invalid("the Poppy-Session header is not a compact JWT: %v (spec 5.2)", err)
	}
	if unverified.Iss == nil {
		return nil, invalid("the Session JWT has no iss (spec 5.2)")
	}
	iss := *unverified.Iss
	if hdr.Dlg == nil || *hdr.Dlg == "" {
		return nil, invalid("the Session JWT carries no delegation in poppy_dlg; Session JWTs are signed with a delegated key, never directly with a key from jwks_uri (spec 5.2)")
	}
	// Spec 5.3 step 1: client metadata and keys.
	ce, e := v.clientFor(ctx, iss)
	if e != nil {
		return nil, e
	}
	// Spec 5.2 Delegated keys steps 1–2.
	now := v.cfg.Now()
	dk, e := v.delegation(ctx, *hdr.Dlg, iss, ce, now)
	if e != nil {
		return nil, e
	}
	// Step 3: the Session JWT's signature with cnf.jwk, and kid = its thumbprint.
	if hdr.Alg == nil || *hdr.Alg != "ES256" {
		return nil, invalid("the Session JWT's alg must be ES256 (spec 5.2)")
	}
	payload, err := jws.Verify([]byte(raw), jws.WithKey(jwa.ES256(), dk.pub))
	if err != nil {
		return nil, invalid("the Session JWT's signature does not verify with the delegated key in its delegation's cnf.jwk (spec 5.2)")
	}
	if hdr.Kid == nil || *hdr.Kid != dk.thumbprint {
		return nil, invalid("the Session JWT's kid is not the RFC 7638 thumbprint of the delegated key (spec 5.2)")
	}
	if hdr.Typ == nil || *hdr.Typ != SessionType {
		return nil, invalid("the Session JWT's typ must be %s (spec 5.2)", SessionType)
	}
	var c sessionClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, invalid("the Session JWT's claims are not a JSON object: %v (spec 5.2)", err)
	}
	// Spec 5.3 step 2: the claims.
	for name, p := range map[string]*string{"iss": c.Iss, "sid": c.Sid, "sub": c.Sub, "htm": c.Htm, "htu": c.Htu, "jti": c.Jti} {
		if p == nil || *p == "" {
			return nil, invalid("the Session JWT has no %s claim (spec 5.2)", name)
		}
	}
	if *c.Iss != iss {
		return nil, invalid("the Session JWT's iss changed between parsing and verification")
	}
	var aud string
	if len(c.Aud) == 0 || json.Unmarshal(c.Aud, &aud) != nil {
		return nil, invalid("the Session JWT's aud must be the Company identifier as a single string (spec 5.2, 10.4)")
	}
	if aud != v.cfg.Identifier {
		return nil, invalid("the Session JWT's aud %q is not this Company's identifier %q (spec 3.2, 5.3)", aud, v.cfg.Identifier)
	}
	if !headers.ValidID(*c.Sid) {
		return nil, invalid("the sid must be 1 to 256 URL-safe base64 characters (spec 5.2, 8.2)")
	}
	if *c.Htm != r.Method {
		return nil, invalid("the Session JWT's htm %q does not match the request method %s (spec 5.3, RFC 9449 §4.3)", *c.Htm, r.Method)
	}
	if err := v.checkHTU(r, *c.Htu); err != nil {
		return nil, err
	}
	if c.Iat == nil {
		return nil, invalid("the Session JWT has no iat (spec 5.2)")
	}
	iat, err := strconv.ParseFloat(string(*c.Iat), 64)
	if err != nil || math.IsNaN(iat) || math.IsInf(iat, 0) {
		return nil, invalid("the Session JWT's iat is not a number (spec 5.2)")
	}
	if d := now.Sub(time.Unix(int64(iat), 0)); d > v.cfg.Window || d < -v.cfg.Window {
		return nil, invalid("the Session JWT's iat is outside the acceptance window of %v; check the Personal Agent's clock (spec 5.3)", v.cfg.Window)
	}
	// Spec 5.3 step 3: ath and the access token.
	if accessToken != "" {
		if c.Ath == nil {
			return nil, invalid("the request carries an access token but the Session JWT has no ath (spec 5.2, 5.3)")
		}
		h := sha256.Sum256([]byte(accessToken))
		want := base64.RawURLEncoding.EncodeToString(h[:])
		if subtle.ConstantTimeCompare([]byte(*c.Ath), []byte(want)) != 1 {
			return nil, invalid("the Session JWT's ath does not match the access token (spec 5.3)")
		}
		if tokenClientID != iss {
			return nil, invalid("the access token was issued to another client_id than the Session JWT's iss (spec 5.3)")
		}
	} else if c.Ath != nil {
		return nil, invalid("the Session JWT has ath but the request carries no access token (spec 5.3)")
	}
	// Spec 3.4: Poppy-Version and Poppy-Extensions.
	version := r.Header.Get(headers.Version)
	if !v.versionServed(version) {
		return nil, &Error{Status: http.StatusBadRequest, Code: CodeVersionUnsupported,
			Description: fmt.Sprintf("Poppy-Version %q is missing or not compatible with a version this Company serves (%s) (spec 3.4)", version, strings.Join(v.cfg.Versions, ", "))}
	}
	exts, extKey := parseExtensions(r.Header.Values(headers.Extensions))
	agentID := ""
	if c.AgentID != nil {
		agentID = *c.AgentID
	}
	// Spec 5.3 step 4 (and the optional jti replay check, spec 5.3 "Replayed JWTs").
	return v.lookup(iss, *c.Sid, *c.Sub, agentID, *c.Jti, version, extKey, exts, time.Unix(int64(iat), 0), now)
}

func (v *Verifier) lookup(iss, sid, sub, agentID, jti, version, extKey string, exts map[string]string, iat, now time.Time) (*Session, *Error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pruneLocked(now)
	jk := iss + "\x00" + jti
	forget := iat.Add(v.cfg.Window + time.Second)
	switch v.jtis.Check(jk, forget, now) {
	case replay.Seen:
		return nil, invalid("this Session JWT's jti was already used; sign a fresh Session JWT for every request (spec 5.2, 5.3)")
	case replay.Forgotten:
		return nil, invalid("this Session JWT is older than the Company's replay cache still covers (it is full); sign a fresh Session JWT and send the request again (spec 5.3)")
	}
	k := sessKey{iss, sid}
	if _, gone := v.ended[k]; gone {
		return nil, &Error{Status: http.StatusBadRequest, Code: CodeSessionEnded,
			Description: "this Session has ended; start a new Session with a new sid and send the request again (spec 5.5)"}
	}
	rec := v.sessions[k]
	isNew := rec == nil
	if rec != nil {
		switch {
		case rec.userID != sub || rec.agentID != agentID:
			return nil, invalid("the sid belongs to a Session with another User ID or Agent ID (spec 5.2, 5.3)")
		case rec.version != version:
			return nil, invalid("Poppy-Version changed within the Session; start a new Session to change it (spec 3.4)")
		case rec.ext != extKey:
			return nil, invalid("Poppy-Extensions changed within the Session; send the same values on every request and start a new Session to change them (spec 3.4)")
		}
	} else {
		rec = &record{userID: sub, agentID: agentID, version: version, ext: extKey, extensions: exts, started: now}
		v.sessions[k] = rec
	}
	rec.lastSeen = now
	v.jtis.Remember(jk, forget, now)
	out := make(map[string]string, len(rec.extensions))
	for n, ver := range rec.extensions {
		out[n] = ver
	}
	return &Session{ClientID: iss, SID: sid, UserID: sub, AgentID: agentID, Version: version, Extensions: out, New: isNew, Started: rec.started}, nil
}

func (v *Verifier) pruneLocked(now time.Time) {
	if now.Sub(v.lastPrune) < time.Minute {
		return
	}
	v.lastPrune = now
	for k, t := range v.ended {
		if now.After(t) {
			delete(v.ended, k)
		}
	}
	for k, r := range v.sessions {
		if now.Sub(r.lastSeen) > v.cfg.SessionIdle {
			delete(v.sessions, k)
		}
	}
	for k, d := range v.dlgs {
		if !now.Before(d.exp) {
			delete(v.dlgs, k)
		}
	}
	for k, c := range v.clients {
		if now.After(c.expires) {
			delete(v.clients, k)
		}
	}
}

// decodeParts decodes a compact JWS's header and payload without verifying anything.
func decodeParts(raw string, hdr, claims any) error {
	h, p, _, err := jwsbb.SplitCompactString(raw)
	if err != nil {
		return errors.New("it must have three dot-separated parts")
	}
	hb, err := base64.RawURLEncoding.DecodeString(string(h))
	if err != nil {
		return errors.New("the header is not base64url")
	}
	if err := json.Unmarshal(hb, hdr); err != nil {
		return errors.New("the header is not a JSON object")
	}
	if claims == nil {
		return nil
	}
	pb, err := base64.RawURLEncoding.DecodeString(string(p))
	if err != nil {
		return errors.New("the payload is not base64url")
	}
	if err := json.Unmarshal(pb, claims); err != nil {
		return errors.New("the payload is not a JSON object")
	}
	return nil
}

// checkHTU compares htu with the request URL as RFC 9449 §4.3 does: query and fragment ignored,
// scheme and host case-insensitive, default port and percent-encoding normalized (RFC 3986 §6).
func (v *Verifier) checkHTU(r *http.Request, htu string) *Error {
	claim, err := url.Parse(htu)
	if err != nil || !strings.EqualFold(claim.Scheme, "https") && !v.cfg.HTUAnyScheme || claim.Host == "" {
		return invalid("the Session JWT's htu %q is not an HTTPS URL (spec 3, 5.2)", htu)
	}
	var req *url.URL
	if v.cfg.RequestURL != nil {
		req = v.cfg.RequestURL(r)
	} else if r.URL.IsAbs() {
		req = r.URL
	} else {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		req = &url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath}
	}
	if req != nil && v.cfg.HTUAnyScheme {
		c := *claim
		c.Scheme = req.Scheme
		claim = &c
	}
	if req == nil || normalizeURL(claim) != normalizeURL(req) {
		return invalid("the Session JWT's htu %q does not match the request URL (spec 5.3, RFC 9449 §4.3)", htu)
	}
	return nil
}

func normalizeURL(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Host)
	switch {
	case scheme == "https":
		host = strings.TrimSuffix(host, ":443")
	case scheme == "http":
		host = strings.TrimSuffix(host, ":80")
	}
	// Re-escaping the decoded path normalizes percent-encoding of unreserved characters and
	// the case of hex digits (RFC 3986 §6.2.2.1–2).
	p := (&url.URL{Path: u.Path}).EscapedPath()
	if p == "" {
		p = "/"
	}
	return scheme + "://" + host + p
}

// versionServed reports whether version ("major.minor") is compatible with a served version:
// same major and, before 1.0, the same minor (spec 3.4).
func (v *Verifier) versionServed(version string) bool {
	for _, s := range v.cfg.Versions {
		if headers.Compatible(version, s) {
			return true
		}
	}
	return false
}

// parseExtensions reads Poppy-Extensions (spec 3.4, agentcore/headers): an unparseable field
// declares no extensions. The key is a canonical form used to check that a Session keeps the
// same values.
func parseExtensions(vals []string) (map[string]string, string) {
	out := map[string]string{}
	for _, x := range headers.ParseExtensions(vals) {
		out[x.Name] = x.Version
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(strconv.Quote(n))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(out[n]))
		b.WriteByte(';')
	}
	return out, b.String()
}

type dlgEntry struct {
	iss, kid   string
	pub        *ecdsa.PublicKey
	thumbprint string
	exp        time.Time
}

type delegationClaims struct {
	Iss *string      `json:"iss"`
	Iat *json.Number `json:"iat"`
	Exp *json.Number `json:"exp"`
	Jti *string      `json:"jti"`
	Cnf *struct {
		JWK json.RawMessage `json:"jwk"`
	} `json:"cnf"`
}

// delegation verifies a delegation as spec 5.2 orders: (1) the signature with the jwks_uri key
// named by kid, (2) typ, iss, expiry and lifetime. Verified delegations are cached until exp.
func (v *Verifier) delegation(ctx context.Context, dlg, iss string, ce *clientEntry, now time.Time) (*dlgEntry, *Error) {
	v.mu.Lock()
	d := v.dlgs[dlg]
	v.mu.Unlock()
	if d != nil && d.iss == iss && now.Before(d.exp) {
		if _, still := ce.keys.LookupKeyID(d.kid); still {
			return d, nil
		}
	}
	var hdr jwtHeader
	if err := decodeParts(dlg, &hdr, nil); err != nil {
		return nil, invalid("the delegation in poppy_dlg is not a compact JWT: %v (spec 5.2)", err)
	}
	if hdr.Kid == nil || *hdr.Kid == "" {
		return nil, invalid("the delegation has no kid naming a key in jwks_uri (spec 5.2)")
	}
	key, ok := ce.keys.LookupKeyID(*hdr.Kid)
	if !ok {
		// The Personal Agent may have rotated its root key: refetch the JWKS, at most every 30 s.
		fresh, e := v.refetchKeys(ctx, iss, ce, now)
		if e != nil {
			return nil, e
		}
		if key, ok = fresh.keys.LookupKeyID(*hdr.Kid); !ok {
			return nil, invalid("no key in the Personal Agent's jwks_uri has the delegation's kid %q (spec 5.2)", *hdr.Kid)
		}
	}
	var alg jwa.SignatureAlgorithm
	switch {
	case hdr.Alg != nil && *hdr.Alg == "ES256":
		alg = jwa.ES256()
	case hdr.Alg != nil && *hdr.Alg == "PS384":
		alg = jwa.PS384()
	default:
		return nil, invalid("the delegation's alg must be ES256 or PS384 (spec 5.2)")
	}
	payload, err := jws.Verify([]byte(dlg), jws.WithKey(alg, key))
	if err != nil {
		return nil, invalid("the delegation's signature does not verify with key %q from jwks_uri (spec 5.2)", *hdr.Kid)
	}
	if hdr.Typ == nil || *hdr.Typ != DelegationType {
		return nil, invalid("the delegation's typ must be %s (spec 5.2)", DelegationType)
	}
	var c delegationClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, invalid("the delegation's claims are not a JSON object (spec 5.2)")
	}
	if c.Iss == nil || *c.Iss != iss {
		return nil, invalid("the delegation's iss is not the Session JWT's iss (spec 5.2)")
	}
	iat, ok1 := numericDate(c.Iat)
	exp, ok2 := numericDate(c.Exp)
	if !ok1 || !ok2 {
		return nil, invalid("the delegation needs numeric iat and exp (spec 5.2)")
	}
	if !now.Before(exp) {
		return nil, invalid("the delegation has expired; the Personal Agent must use a delegated key with a current delegation (spec 5.2)")
	}
	if exp.Sub(iat) > maxDelegation {
		return nil, invalid("the delegation's exp is more than 24 hours after its iat (spec 5.2)")
	}
	if c.Jti == nil || *c.Jti == "" {
		return nil, invalid("the delegation has no jti (spec 5.2)")
	}
	if c.Cnf == nil || len(c.Cnf.JWK) == 0 {
		return nil, invalid("the delegation has no cnf.jwk (spec 5.2)")
	}
	ck, err := jwk.ParseKey(c.Cnf.JWK)
	if err != nil {
		return nil, invalid("the delegation's cnf.jwk is not a JWK (spec 5.2, RFC 7800)")
	}
	if priv, err := jwk.IsPrivateKey(ck); err != nil || priv {
		return nil, invalid("the delegation's cnf.jwk must be a public key without private members (spec 5.2)")
	}
	var pub ecdsa.PublicKey
	if err := jwk.Export(ck, &pub); err != nil || pub.Curve != elliptic.P256() {
		return nil, invalid("the delegated key must be a P-256 key, since Session JWTs use ES256 (spec 5.2)")
	}
	tp, err := ck.Thumbprint(crypto256)
	if err != nil {
		return nil, invalid("cannot compute the delegated key's thumbprint (spec 5.2)")
	}
	d = &dlgEntry{iss: iss, kid: *hdr.Kid, pub: &pub, thumbprint: base64.RawURLEncoding.EncodeToString(tp), exp: exp}
	v.mu.Lock()
	v.dlgs[dlg] = d
	v.mu.Unlock()
	return d, nil
}

func numericDate(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	f, err := strconv.ParseFloat(string(*n), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1<<40 {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

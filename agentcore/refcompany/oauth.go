package refcompany

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/poppydesk/poppydesk/agentcore/sessioncheck"
	"github.com/poppydesk/poppydesk/internal/replay"
)

// Faults of the authorization server (spec 4). They are listed in Faults (server.go), so
// SetFault and Options.Faults accept them like the discovery faults.
const (
	FaultIssMissing        = "iss-missing"         // authorization responses carry no iss (spec 4.2, RFC 9207)
	FaultIssWrong          = "iss-wrong"           // authorization responses carry another issuer's iss
	FaultScopeWider        = "scope-wider"         // token responses grant a scope that was not requested (spec 4.7)
	FaultDeviceForeignHost = "device-foreign-host" // verification_uri on a host outside the Company (spec 4.3)
	// FaultRefreshRotation: the Company has revoked every refresh token of the client (as after
	// rotation reuse detection, or the User disconnecting the agent), so refresh answers
	// invalid_grant (spec 5.5). Normal rotation (old refresh token invalid after use) is the default.
	FaultRefreshRotation = "refresh-rotation"
	// FaultRefreshNoRotation: refresh returns no new refresh token, and the old one stays valid
	// (RFC 6749 §6: the client keeps using it).
	FaultRefreshNoRotation = "refresh-no-rotation"
	FaultDPoPNonce         = "dpop-nonce"       // the token endpoint requires a DPoP nonce (RFC 9449 §8)
	FaultDeviceSlowDown    = "device-slow-down" // each device code's first poll answers slow_down (RFC 8628 §3.5)
)

// ForeignDeviceHost is the host the device-foreign-host fault puts in verification_uri.
const ForeignDeviceHost = "sign-in.example.net"

// Lifetimes of what the authorization server issues.
const (
	codeLifetime        = 60 * time.Second
	accessTokenLifetime = time.Hour
	deviceLifetime      = 10 * time.Minute
	deviceInterval      = 5 // seconds
	maxAssertionLife    = 5 * time.Minute
	clockSkew           = 60 * time.Second
)

// Scopes the reference Company's issuer supports (scopes_supported).
var supportedScopes = []string{"orders:read", "orders:write"}

type authServer struct {
	mu        sync.Mutex
	codes     map[string]*authCode
	grants    map[string]*grant // refresh token -> grant
	devices   map[string]*deviceReq
	userCodes map[string]string // user_code -> device_code
	pending   map[string]*authRequest
	jtis      *replay.Cache // client assertion and DPoP proof jtis until they expire (as many as a Session check keeps)
	atInfo    map[string]tokenInfo
	resources map[string]bool
	clients   map[string]*clientInfo
	dpop      bool
	nonce     string
}

// clientInfo is what the authorization server keeps of a client's metadata (spec 4.1).
type clientInfo struct {
	ClientID, ClientName string
	RedirectURIs         []string
	keys                 jwk.Set
	fetched              time.Time
}

type authRequest struct {
	clientID, clientName, redirectURI, state, challenge, resource string
	scopes                                                        []string
	expires                                                       time.Time
}

type authCode struct {
	clientID, redirectURI, challenge, resource, account string
	requested, scopes                                   []string
	expires                                             time.Time
}

type grant struct {
	id, clientID, account string
	scopes                []string
}

type deviceReq struct {
	clientID, clientName, account, resource string
	requested                               []string
	status                                  string // pending, approved, denied
	scopes                                  []string
	expires, lastPoll                       time.Time
	interval                                time.Duration
	slowedDown                              bool
}

type tokenInfo struct {
	grantID, resource, jkt string
}

const cryptoSHA256 = crypto.SHA256

// auth returns the Server's authorization server state (a field of Server, see server.go).
func (s *Server) auth() *authServer { return s.authState() }

func newAuthServer() *authServer {
	return &authServer{codes: map[string]*authCode{}, grants: map[string]*grant{}, devices: map[string]*deviceReq{},
		userCodes: map[string]string{}, pending: map[string]*authRequest{}, atInfo: map[string]tokenInfo{},
		resources: map[string]bool{}, clients: map[string]*clientInfo{}, nonce: randID(16), jtis: replay.New(sessioncheck.DefaultMaxJTIs)}
}

func randID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// SetDPoP makes the issuer list dpop_signing_alg_values_supported ["ES256"] and bind the access
// tokens of token requests that carry a valid DPoP proof (RFC 9449). Off by default.
func (s *Server) SetDPoP(on bool) {
	a := s.auth()
	a.mu.Lock()
	a.dpop = on
	a.mu.Unlock()
}

// AllowResource adds resources (RFC 8707) the issuer issues tokens for, besides
// https://{organization.domain} and the MCP server's url (MCPURL); others get invalid_target.
func (s *Server) AllowResource(resources ...string) {
	a := s.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range resources {
		a.resources[r] = true
	}
}

// TokenResource returns the resource an access token was issued for (the domain origin for
// default tokens) and whether the token is known. A service with its own resource accepts only
// tokens issued for it (spec 4.5).
func (s *Server) TokenResource(token string) (string, bool) {
	a := s.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	ti, ok := a.atInfo[token]
	return ti.resource, ok
}

// ActiveRefreshTokens counts the refresh tokens still valid for clientID ("" for every client).
func (s *Server) ActiveRefreshTokens(clientID string) int {
	a := s.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, g := range a.grants {
		if clientID == "" || g.clientID == clientID {
			n++
		}
	}
	return n
}

// editAuthMetadata adds the authorization server's optional metadata.
func (s *Server) editAuthMetadata(doc map[string]any) {
	a := s.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dpop {
		doc["dpop_signing_alg_values_supported"] = []any{"ES256"}
	}
}

func (s *Server) allowedResource(r string) bool {
	if r == "" || r == s.Origin() || r == s.MCPURL() {
		return true
	}
	a := s.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.resources[r]
}

// serveOAuth is the authorization server: /oauth/authorize, /oauth/token, /oauth/device,
// /oauth/revoke and the device verification page /device (spec 4, RFC 6749, 7636, 8628, 7009).
func (s *Server) serveOAuth(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/oauth/authorize":
		if r.Method == http.MethodPost {
			s.authorizeDecision(w, r)
		} else {
			s.authorize(w, r)
		}
	case "/oauth/token":
		s.token(w, r)
	case "/oauth/device":
		s.deviceAuthorization(w, r)
	case "/oauth/revoke":
		s.revoke(w, r)
	case "/device":
		s.devicePage(w, r)
	default:
		http.NotFound(w, r)
	}
}

// oauthError is an OAuth error response (RFC 6749 §5.2).
type oauthError struct {
	status            int
	code, description string
}

func (e *oauthError) write(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="auth.shop.localhost"`)
	}
	writeError(w, e.status, e.code, e.description)
}

func oerr(status int, code, format string, args ...any) *oauthError {
	return &oauthError{status: status, code: code, description: fmt.Sprintf(format, args...)}
}

// clientMeta fetches (and caches for a minute) the client metadata at clientID and its JWKS,
// each without following redirects, as the Session check does (sessioncheck.FetchClient, spec
// 4.1, CIMD), and checks that the client authenticates with private_key_jwt.
func (s *Server) clientMeta(r *http.Request, clientID string) (*clientInfo, *oauthError) {
	a := s.auth()
	now := s.now()
	a.mu.Lock()
	ci := a.clients[clientID]
	a.mu.Unlock()
	if ci != nil && now.Sub(ci.fetched) < time.Minute {
		return ci, nil
	}
	if s.fault(FaultClientMetadataUnfetched) {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "unknown client_id: this issuer knows only the clients registered with it")
	}
	md, e := s.verifierFor().FetchClient(r.Context(), clientID)
	if e != nil {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "fetching the client metadata failed: %s", e.Description)
	}
	if md.TokenEndpointAuthMethod != "private_key_jwt" {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "token_endpoint_auth_method must be private_key_jwt (spec 4.1)")
	}
	ci = &clientInfo{ClientID: md.ClientID, ClientName: md.ClientName, RedirectURIs: md.RedirectURIs, keys: md.Keys, fetched: now}
	a.mu.Lock()
	a.clients[clientID] = ci
	a.mu.Unlock()
	return ci, nil
}

// authenticate parses the form and checks private_key_jwt client authentication (RFC 7523 §3,
// spec 4.1): the assertion verifies with the client's JWKS, iss = sub = client_id, aud is the
// issuer as one string exactly, exp is short, iat is present, and jti is new.
func (s *Server) authenticate(r *http.Request) (*clientInfo, *oauthError) {
	if err := r.ParseForm(); err != nil {
		return nil, oerr(http.StatusBadRequest, "invalid_request", "the form does not parse")
	}
	if r.Method != http.MethodPost {
		return nil, oerr(http.StatusMethodNotAllowed, "invalid_request", "use POST")
	}
	if r.Form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || r.Form.Get("client_assertion") == "" {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "client authentication must be private_key_jwt with a client assertion (spec 4.1)")
	}
	raw := r.Form.Get("client_assertion")
	msg, err := jws.Parse([]byte(raw))
	if err != nil {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion is not a JWS")
	}
	var cl struct {
		Iss string          `json:"iss"`
		Sub string          `json:"sub"`
		Aud json.RawMessage `json:"aud"`
		Exp *int64          `json:"exp"`
		Iat *int64          `json:"iat"`
		Jti string          `json:"jti"`
	}
	if err := json.Unmarshal(msg.Payload(), &cl); err != nil {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion's claims are not JSON")
	}
	if cid := r.Form.Get("client_id"); cid != "" && cid != cl.Iss {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "client_id differs from the assertion's iss")
	}
	ci, oe := s.clientMeta(r, cl.Iss)
	if oe != nil {
		return nil, oe
	}
	// Spec 4.1: Companies MUST accept ES256 and SHOULD accept PS384 (blind signing, 10.7);
	// nothing else signs a client assertion.
	if len(msg.Signatures()) != 1 {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion must carry one signature")
	}
	if alg, _ := msg.Signatures()[0].ProtectedHeaders().Algorithm(); alg != jwa.ES256() && alg != jwa.PS384() {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion must be signed with ES256 or PS384, not %s (spec 4.1)", alg)
	}
	if _, err := jws.Verify([]byte(raw), jws.WithKeySet(ci.keys, jws.WithInferAlgorithmFromKey(true))); err != nil {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion's signature does not verify with the client's JWKS (spec 4.1)")
	}
	if !s.audAccepted(cl.Aud) { // lenient.go
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion's aud must be the issuer %s as one string (spec 4.1, 10.4)", s.Issuer())
	}
	now := s.now()
	switch {
	case cl.Sub != cl.Iss:
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion's sub must equal iss (RFC 7523 §3)")
	case cl.Exp == nil || cl.Iat == nil || cl.Jti == "":
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion needs exp, iat and jti (spec 4.1)")
	case now.After(time.Unix(*cl.Exp, 0).Add(clockSkew)):
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion has expired")
	case time.Unix(*cl.Exp, 0).Sub(time.Unix(*cl.Iat, 0)) > maxAssertionLife, time.Unix(*cl.Iat, 0).After(now.Add(clockSkew)):
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion must be short-lived (at most 5 minutes) and not issued in the future (spec 4.1)")
	}
	if !s.auth().useJTI("ca:"+cl.Iss+":"+cl.Jti, time.Unix(*cl.Exp, 0).Add(clockSkew), now) {
		return nil, oerr(http.StatusUnauthorized, "invalid_client", "the client assertion's jti was used before (RFC 7523 §3), or the assertion is older than the Company's full replay cache still covers; sign a fresh assertion")
	}
	return ci, nil
}

// useJTI records a jti until exp (the replay cache, internal/replay); false when it was seen
// before, or when the cache is full and its token as old as one it had to forget.
func (a *authServer) useJTI(key string, exp, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.jtis.Use(key, exp, now) == replay.Fresh
}

// redirectMatches compares a requested redirect_uri with the registered ones exactly, except
// the port of a loopback redirect URI (spec 4.2, RFC 8252 §7.3).
func redirectMatches(registered []string, requested string) bool {
	if slices.Contains(registered, requested) {
		return true
	}
	ru, err := url.Parse(requested)
	if err != nil || ru.Scheme != "http" || ru.Hostname() != "127.0.0.1" && ru.Hostname() != "::1" {
		return false
	}
	for _, reg := range registered {
		gu, err := url.Parse(reg)
		if err != nil || gu.Scheme != "http" || gu.Hostname() != ru.Hostname() {
			continue
		}
		if gu.Port() == "" && gu.Path == ru.Path && gu.RawQuery == ru.RawQuery && ru.Fragment == "" {
			return true
		}
	}
	return false
}

func knownScopes(scopes []string) bool {
	for _, s := range scopes {
		if !slices.Contains(supportedScopes, s) {
			return false
		}
	}
	return len(scopes) > 0
}

// authorize handles the authorization request (RFC 6749 §4.1.1, RFC 7636, spec 4.2) and shows
// the sign-in and consent page.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	clientID, redirectURI := q.Get("client_id"), q.Get("redirect_uri")
	ci, oe := s.clientMeta(r, clientID)
	if oe != nil {
		s.errorPage(w, http.StatusBadRequest, "This sign-in link is not valid: "+oe.description)
		return
	}
	if !s.redirectAccepted(ci.RedirectURIs, redirectURI) { // lenient.go
		s.errorPage(w, http.StatusBadRequest, "This sign-in link is not valid: its redirect_uri is not one the app registered (spec 4.2).")
		return
	}
	back := func(code, desc string) {
		s.redirectBack(w, r, redirectURI, url.Values{"error": {code}, "error_description": {desc}, "state": {q.Get("state")}})
	}
	scopes := strings.Fields(q.Get("scope"))
	switch {
	case q.Get("response_type") != "code":
		back("unsupported_response_type", "response_type must be code")
	case (q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256") && !s.fault(FaultPKCEOptional):
		back("invalid_request", "PKCE with code_challenge_method S256 is required")
	case !knownScopes(scopes):
		back("invalid_scope", "scope is missing or names an unknown scope (spec 4.7)")
	case !s.allowedResource(q.Get("resource")):
		back("invalid_target", "this issuer does not serve that resource (RFC 8707)")
	default:
		id := randID(24)
		a := s.auth()
		a.mu.Lock()
		a.pending[id] = &authRequest{clientID: clientID, clientName: ci.ClientName, redirectURI: redirectURI, state: q.Get("state"),
			challenge: q.Get("code_challenge"), resource: q.Get("resource"), scopes: scopes, expires: s.now().Add(10 * time.Minute)}
		a.mu.Unlock()
		s.consentPage(w, id, ci.ClientName, redirectURI, scopes)
	}
}

// redirectBack sends the browser back to the client with iss added (RFC 9207, spec 4.2), or
// without / with a wrong one under the iss faults.
func (s *Server) redirectBack(w http.ResponseWriter, r *http.Request, redirectURI string, v url.Values) {
	switch {
	case s.fault(FaultIssMissing):
	case s.fault(FaultIssWrong):
		v.Set("iss", s.URL(OtherHost, ""))
	default:
		v.Set("iss", s.Issuer())
	}
	for k, vals := range v {
		if len(vals) == 1 && vals[0] == "" {
			delete(v, k)
		}
	}
	u, _ := url.Parse(redirectURI)
	u.RawQuery = v.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// authorizeDecision handles the consent form: Approve with the ticked scopes, or Deny.
func (s *Server) authorizeDecision(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, http.StatusBadRequest, "The form could not be read.")
		return
	}
	a := s.auth()
	a.mu.Lock()
	req := a.pending[r.PostForm.Get("request")]
	delete(a.pending, r.PostForm.Get("request"))
	a.mu.Unlock()
	if req == nil || s.now().After(req.expires) {
		s.errorPage(w, http.StatusBadRequest, "This sign-in request has expired or was already answered. Start again from the app.")
		return
	}
	var ticked []string
	for _, sc := range r.PostForm["scope"] {
		if slices.Contains(req.scopes, sc) && !slices.Contains(ticked, sc) {
			ticked = append(ticked, sc)
		}
	}
	if r.PostForm.Get("decision") != "approve" || len(ticked) == 0 {
		// Approving no scope ends as a decline (spec 4.7).
		s.redirectBack(w, r, req.redirectURI, url.Values{"error": {"access_denied"}, "error_description": {"the user declined"}, "state": {req.state}})
		return
	}
	account := strings.TrimSpace(r.PostForm.Get("account"))
	if account == "" {
		account = "alex@shop.example"
	}
	code := randID(24)
	a.mu.Lock()
	a.codes[code] = &authCode{clientID: req.clientID, redirectURI: req.redirectURI, challenge: req.challenge, resource: req.resource,
		account: account, requested: req.scopes, scopes: ticked, expires: s.now().Add(codeLifetime)}
	a.mu.Unlock()
	s.redirectBack(w, r, req.redirectURI, url.Values{"code": {code}, "state": {req.state}})
}

// dpopCheck verifies a DPoP proof at the token endpoint (RFC 9449 §4.3) and returns the key's
// thumbprint, "" without a proof or when DPoP is off.
func (s *Server) dpopCheck(w http.ResponseWriter, r *http.Request) (string, *oauthError) {
	a := s.auth()
	a.mu.Lock()
	on, nonce := a.dpop, a.nonce
	a.mu.Unlock()
	proof := r.Header.Get("DPoP")
	if !on || proof == "" {
		return "", nil
	}
	jkt, _, err := s.verifyProof(proof, http.MethodPost, s.Issuer()+r.URL.Path, "")
	if err != nil {
		return "", oerr(http.StatusBadRequest, "invalid_dpop_proof", "%s", err.Error())
	}
	if s.fault(FaultDPoPNonce) && jktNonce(proof) != nonce {
		w.Header().Set("DPoP-Nonce", nonce)
		return "", oerr(http.StatusBadRequest, "use_dpop_nonce", "the token endpoint requires a DPoP nonce")
	}
	return jkt, nil
}

func jktNonce(proof string) string {
	msg, err := jws.Parse([]byte(proof))
	if err != nil {
		return ""
	}
	var c struct {
		Nonce string `json:"nonce"`
	}
	json.Unmarshal(msg.Payload(), &c)
	return c.Nonce
}

// verifyProof checks a DPoP proof (RFC 9449 §4.3): typ dpop+jwt, ES256, an embedded public jwk
// that verifies it, htm, htu, a recent iat, a new jti, and ath when accessToken is set. It
// returns the key's thumbprint.
func (s *Server) verifyProof(proof, method, htu, accessToken string) (string, string, error) {
	msg, err := jws.Parse([]byte(proof))
	if err != nil || len(msg.Signatures()) != 1 {
		return "", "", errors.New("the DPoP proof is not a compact JWS")
	}
	h := msg.Signatures()[0].ProtectedHeaders()
	typ, _ := h.Type()
	alg, _ := h.Algorithm()
	key, ok := h.JWK()
	if typ != "dpop+jwt" || alg.String() != "ES256" || !ok {
		return "", "", errors.New("the DPoP proof needs typ dpop+jwt, alg ES256 and a jwk header")
	}
	if _, err := jws.Verify([]byte(proof), jws.WithKey(alg, key)); err != nil {
		return "", "", errors.New("the DPoP proof's signature does not verify")
	}
	var c struct {
		Jti, Htm, Htu, Ath, Nonce string
		Iat                       int64
	}
	if err := json.Unmarshal(msg.Payload(), &c); err != nil {
		return "", "", errors.New("the DPoP proof's claims are not JSON")
	}
	now := s.now()
	iat := time.Unix(c.Iat, 0)
	switch {
	case c.Htm != method || c.Htu != htu:
		return "", "", fmt.Errorf("the DPoP proof's htm/htu do not match %s %s", method, htu)
	case iat.Before(now.Add(-clockSkew)) || iat.After(now.Add(clockSkew)):
		return "", "", errors.New("the DPoP proof's iat is not recent")
	case c.Jti == "" || !s.auth().useJTI("dpop:"+c.Jti, now.Add(2*clockSkew), now):
		return "", "", errors.New("the DPoP proof's jti is missing or was used before (or the proof is older than the Company's full replay cache still covers)")
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		if c.Ath != base64.RawURLEncoding.EncodeToString(sum[:]) {
			return "", "", errors.New("the DPoP proof's ath does not match the access token")
		}
	}
	tp, err := key.Thumbprint(cryptoSHA256)
	if err != nil {
		return "", "", err
	}
	return base64.RawURLEncoding.EncodeToString(tp), c.Nonce, nil
}

// VerifyDPoPAccess checks a request that presents a DPoP-bound access token at a protected
// endpoint (RFC 9449 §7): "Authorization: DPoP token" and a proof for this method and URL with
// ath, from the key the token is bound to. A resource handler calls it for the DPoP scheme.
func (s *Server) VerifyDPoPAccess(r *http.Request, token string) error {
	a := s.auth()
	a.mu.Lock()
	ti, ok := a.atInfo[token]
	a.mu.Unlock()
	if !ok || ti.jkt == "" {
		return errors.New("the access token is not DPoP-bound")
	}
	htu := "https://" + r.Host + r.URL.Path
	jkt, _, err := s.verifyProof(r.Header.Get("DPoP"), r.Method, htu, token)
	if err != nil {
		return err
	}
	if jkt != ti.jkt {
		return errors.New("the DPoP proof is signed by another key than the one the token is bound to")
	}
	return nil
}

// token is the token endpoint (RFC 6749 §4.1.3, §6, RFC 8628 §3.4, RFC 8707, RFC 9449).
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ci, oe := s.authenticate(r)
	if oe != nil {
		oe.write(w)
		return
	}
	jkt, oe := s.dpopCheck(w, r)
	if oe != nil {
		oe.write(w)
		return
	}
	resource := r.PostForm.Get("resource")
	if !s.allowedResource(resource) {
		oerr(http.StatusBadRequest, "invalid_target", "this issuer does not serve resource %q (RFC 8707)", resource).write(w)
		return
	}
	a := s.auth()
	now := s.now()
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		a.mu.Lock()
		c := a.codes[r.PostForm.Get("code")]
		delete(a.codes, r.PostForm.Get("code")) // one use
		a.mu.Unlock()
		switch {
		case c == nil || now.After(c.expires) || c.clientID != ci.ClientID:
			oerr(http.StatusBadRequest, "invalid_grant", "the code is unknown, used, expired or for another client").write(w)
			return
		case r.PostForm.Get("redirect_uri") != c.redirectURI:
			oerr(http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request").write(w)
			return
		}
		v := r.PostForm.Get("code_verifier")
		sum := sha256.Sum256([]byte(v))
		if s.fault(FaultPKCEOptional) && c.challenge == "" {
			// The fault (lenient.go): a code issued without PKCE is redeemed without a verifier.
		} else if len(v) < 43 || len(v) > 128 || subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(c.challenge)) != 1 {
			oerr(http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code challenge (RFC 7636 §4.6)").write(w)
			return
		}
		if resource == "" {
			resource = c.resource
		}
		g := &grant{id: randID(12), clientID: ci.ClientID, account: c.account, scopes: c.scopes}
		s.issue(w, g, c.requested, s.signInGranted(c.scopes), resource, jkt, true) // the fault: hostile.go
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		a.mu.Lock()
		g := a.grants[rt]
		if g != nil && s.fault(FaultRefreshRotation) {
			a.revokeGrantLocked(g.id)
			g = nil
		}
		a.mu.Unlock()
		if g == nil || g.clientID != ci.ClientID {
			oerr(http.StatusBadRequest, "invalid_grant", "the refresh token is unknown, revoked or for another client").write(w)
			return
		}
		requested := g.scopes
		if sc := r.PostForm.Get("scope"); sc != "" {
			requested = strings.Fields(sc)
			for _, x := range requested {
				if !slices.Contains(g.scopes, x) {
					oerr(http.StatusBadRequest, "invalid_scope", "scope %q exceeds the refresh token's scopes", x).write(w)
					return
				}
			}
		}
		rotate := !s.fault(FaultRefreshNoRotation)
		if rotate {
			a.mu.Lock()
			delete(a.grants, rt) // rotation: the old refresh token is invalid after use (RFC 6749 §6)
			a.mu.Unlock()
		}
		s.issue(w, g, requested, requested, resource, jkt, rotate)
	case "urn:ietf:params:oauth:grant-type:device_code":
		s.pollDevice(w, r, ci, resource, jkt, now)
	default:
		oerr(http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code, refresh_token or the device_code grant").write(w)
	}
}

// revokeGrantLocked removes every refresh and access token of a grant (RFC 7009 §2.1).
func (a *authServer) revokeGrantLocked(id string) []string {
	var ats []string
	for rt, g := range a.grants {
		if g.id == id {
			delete(a.grants, rt)
		}
	}
	for at, ti := range a.atInfo {
		if ti.grantID == id {
			delete(a.atInfo, at)
			ats = append(ats, at)
		}
	}
	return ats
}

// issue writes a token response (RFC 6749 §5.1, spec 4.7) and records the tokens, so the
// reference Company's protected endpoints accept the access token.
func (s *Server) issue(w http.ResponseWriter, g *grant, requested, granted []string, resource, jkt string, newRefresh bool) {
	if resource == "" {
		resource = s.Origin()
	}
	at := "at_" + randID(24)
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(accessTokenLifetime / time.Second)}
	if jkt != "" {
		resp["token_type"] = "DPoP"
	}
	shown := granted
	if s.fault(FaultScopeWider) {
		shown = append(slices.Clone(granted), "admin")
	}
	if !slices.Equal(sortedCopy(shown), sortedCopy(requested)) {
		resp["scope"] = strings.Join(shown, " ")
	}
	a := s.auth()
	a.mu.Lock()
	if newRefresh {
		rt := "rt_" + randID(24)
		a.grants[rt] = g
		resp["refresh_token"] = rt
	}
	a.atInfo[at] = tokenInfo{grantID: g.id, resource: resource, jkt: jkt}
	a.mu.Unlock()
	s.AddAccessToken(at, g.clientID, granted...)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, resp)
}

func sortedCopy(v []string) []string {
	c := slices.Clone(v)
	slices.Sort(c)
	return c
}

// deviceAuthorization is the device authorization endpoint (RFC 8628 §3.1, §3.2).
func (s *Server) deviceAuthorization(w http.ResponseWriter, r *http.Request) {
	ci, oe := s.authenticate(r)
	if oe != nil {
		oe.write(w)
		return
	}
	scopes := strings.Fields(r.PostForm.Get("scope"))
	if !knownScopes(scopes) {
		oerr(http.StatusBadRequest, "invalid_scope", "scope is missing or names an unknown scope (spec 4.7)").write(w)
		return
	}
	if !s.allowedResource(r.PostForm.Get("resource")) {
		oerr(http.StatusBadRequest, "invalid_target", "this issuer does not serve that resource (RFC 8707)").write(w)
		return
	}
	dc := randID(32)
	uc := userCode()
	a := s.auth()
	a.mu.Lock()
	a.devices[dc] = &deviceReq{clientID: ci.ClientID, clientName: ci.ClientName, resource: r.PostForm.Get("resource"), requested: scopes,
		status: "pending", expires: s.now().Add(deviceLifetime), interval: deviceInterval * time.Second}
	a.userCodes[uc] = dc
	a.mu.Unlock()
	vu := s.Issuer() + "/device"
	if s.fault(FaultDeviceForeignHost) {
		vu = "https://" + ForeignDeviceHost + "/device"
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"device_code": dc, "user_code": uc, "verification_uri": vu,
		"verification_uri_complete": vu + "?user_code=" + url.QueryEscape(uc), "expires_in": int(deviceLifetime / time.Second), "interval": deviceInterval})
}

// userCode returns an 8-letter code from an alphabet without look-alikes (RFC 8628 §6.1).
func userCode() string {
	const alphabet = "BCDFGHJKLMNPQRSTVWXZ"
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	out := make([]byte, 0, 9)
	for i, c := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, alphabet[int(c)%len(alphabet)])
	}
	return string(out)
}

// pollDevice answers a device_code poll (RFC 8628 §3.4, §3.5).
func (s *Server) pollDevice(w http.ResponseWriter, r *http.Request, ci *clientInfo, resource, jkt string, now time.Time) {
	dc := r.PostForm.Get("device_code")
	a := s.auth()
	a.mu.Lock()
	d := a.devices[dc]
	if d == nil || d.clientID != ci.ClientID {
		a.mu.Unlock()
		oerr(http.StatusBadRequest, "invalid_grant", "the device code is unknown or for another client").write(w)
		return
	}
	var e *oauthError
	switch {
	case now.After(d.expires):
		delete(a.devices, dc)
		e = oerr(http.StatusBadRequest, "expired_token", "the device code has expired")
	case !d.slowedDown && s.fault(FaultDeviceSlowDown), !d.lastPoll.IsZero() && now.Sub(d.lastPoll) < d.interval:
		d.slowedDown = true
		d.interval += 5 * time.Second
		e = oerr(http.StatusBadRequest, "slow_down", "poll less often")
	case d.status == "pending":
		e = oerr(http.StatusBadRequest, "authorization_pending", "")
	case d.status == "denied":
		delete(a.devices, dc)
		e = oerr(http.StatusBadRequest, "access_denied", "the user declined")
	}
	d.lastPoll = now
	if e != nil {
		a.mu.Unlock()
		e.write(w)
		return
	}
	delete(a.devices, dc)
	a.mu.Unlock()
	if resource == "" {
		resource = d.resource
	}
	g := &grant{id: randID(12), clientID: ci.ClientID, account: d.account, scopes: d.scopes}
	s.issue(w, g, d.requested, s.signInGranted(d.scopes), resource, jkt, true) // the fault: hostile.go
}

// approveDevice records the person's answer on the verification page for userCode. It reports
// whether the code was pending.
func (s *Server) approveDevice(userCode, account string, approve bool, scopes []string) bool {
	a := s.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	uc := strings.ToUpper(strings.TrimSpace(userCode))
	d := a.devices[a.userCodes[uc]]
	if d == nil || d.status != "pending" || s.now().After(d.expires) {
		return false
	}
	delete(a.userCodes, uc)
	var ticked []string
	for _, sc := range scopes {
		if slices.Contains(d.requested, sc) && !slices.Contains(ticked, sc) {
			ticked = append(ticked, sc)
		}
	}
	if !approve || len(ticked) == 0 {
		d.status = "denied"
		return true
	}
	d.status, d.scopes, d.account = "approved", ticked, account
	return true
}

func (s *Server) deviceByUserCode(userCode string) *deviceReq {
	a := s.auth()
	a.mu.Lock()
	defer a.mu.Unlock()
	d := a.devices[a.userCodes[strings.ToUpper(strings.TrimSpace(userCode))]]
	if d == nil || d.status != "pending" {
		return nil
	}
	c := *d
	return &c
}

// revoke is the revocation endpoint (RFC 7009): revoking a refresh token revokes its grant's
// tokens; the answer is 200 whether or not the token was known.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	ci, oe := s.authenticate(r)
	if oe != nil {
		oe.write(w)
		return
	}
	tok := r.PostForm.Get("token")
	a := s.auth()
	a.mu.Lock()
	var dropped []string
	if g := a.grants[tok]; g != nil && g.clientID == ci.ClientID {
		dropped = a.revokeGrantLocked(g.id)
	} else if _, ok := a.atInfo[tok]; ok {
		delete(a.atInfo, tok)
		dropped = []string{tok}
	}
	a.mu.Unlock()
	s.mu.Lock()
	for _, at := range dropped {
		delete(s.tokens, at)
	}
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

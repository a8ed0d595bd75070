package session

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
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/poppydesk/poppydesk/agentcore/headers"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// ProtocolVersion is the protocol version this engine implements (spec 3.4).
const ProtocolVersion = "0.4"

// Errors a caller can test for with errors.Is.
var (
	// ErrAnonymousToken: an access token was given to a Session with an anonymous browsing
	// User ID (spec 5.1, 5.4). Nothing was signed.
	ErrAnonymousToken = errors.New("an anonymous browsing Session never carries an access token (spec 5.1, 5.4); open a Session for the account instead")
	// ErrSessionReplaced: the Session was renewed or closed; use the Session the Manager returned.
	ErrSessionReplaced = errors.New("this Session was renewed or closed and must not sign more requests; use the new Session from the Manager (spec 5.5)")
)

// Delegator issues delegations for delegated keys (spec 5.2); *identity.Agent implements it.
type Delegator interface {
	ClientID() string
	Delegate(ctx context.Context, pub *ecdsa.PublicKey, lifetime time.Duration) (string, time.Time, error)
}

// Extension is one extension the Personal Agent uses with a Company, in one version (spec 3.3,
// 3.4), as agentcore/headers writes it.
type Extension = headers.Extension

// Config configures a [Manager].
type Config struct {
	Secrets   store.Secrets
	Delegator Delegator
	// Now is the clock (default time.Now).
	Now func() time.Time
	// DelegationLifetime is the lifetime of new delegations (default 12 h, at most 24 h; spec 5.2).
	DelegationLifetime time.Duration
	// RotateBefore: a new delegated key is made when the current delegation has less than this
	// left (default 1 h). Must be shorter than DelegationLifetime.
	RotateBefore time.Duration
	// Version is the default Poppy-Version (default [ProtocolVersion]).
	Version string
	Logger  *slog.Logger
}

// Manager hands out Sessions per (Company identifier, account, anonymous) and keeps the User's
// identity at each Company: User ID, optional Agent ID and delegated key (spec 5, 5.1, 5.2).
type Manager struct {
	cfg Config

	mu       sync.Mutex
	ids      map[string]*userIdentity // persistent identities, by Company identifier
	anon     map[string]*userIdentity // anonymous browsing identities, by Company identifier
	sessions map[sessKey]*Session
	usedSIDs map[string]struct{}
	// bufs holds the buffers Session JWTs are assembled in (*signScratch, a few KiB each).
	bufs sync.Pool
}

type sessKey struct {
	company, account string
	anonymous        bool
}

// NewManager returns a Manager. Secrets and Delegator are required.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Secrets == nil || cfg.Delegator == nil {
		return nil, errors.New("session: Config needs Secrets and Delegator")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DelegationLifetime == 0 {
		cfg.DelegationLifetime = 12 * time.Hour
	}
	if cfg.RotateBefore == 0 {
		cfg.RotateBefore = time.Hour
	}
	if cfg.DelegationLifetime > identity.MaxDelegationLifetime || cfg.RotateBefore >= cfg.DelegationLifetime {
		return nil, fmt.Errorf("session: delegation lifetime %v must be at most 24h and longer than RotateBefore %v (spec 5.2)", cfg.DelegationLifetime, cfg.RotateBefore)
	}
	if cfg.Version == "" {
		cfg.Version = ProtocolVersion
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Manager{
		cfg:      cfg,
		ids:      map[string]*userIdentity{},
		anon:     map[string]*userIdentity{},
		sessions: map[sessKey]*Session{},
		usedSIDs: map[string]struct{}{},
	}, nil
}

// Options select which Session [Manager.Open] returns.
type Options struct {
	// Account is the account label at the Company ("" when signed out). Separate accounts use
	// separate Sessions (spec 5.4, 10.4).
	Account string
	// Anonymous uses a throwaway User ID kept only in memory, like a private browser window
	// (spec 5.1). Such a Session never carries an access token.
	Anonymous bool
	// AgentID sends the User's Agent ID for this Company (spec 5.1).
	AgentID bool
	// Version is the Poppy-Version (default the Manager's).
	Version string
	// Extensions are declared in Poppy-Extensions (spec 3.4).
	Extensions []Extension
}

// Open returns the current Session for (company, opts.Account, opts.Anonymous), or starts one.
// company is the Company identifier (spec 3.2): the issuer, or https://{organization.domain}.
// A Session whose version, extensions or Agent ID choice differ from opts is replaced by a new
// Session with a new sid, since those values stay fixed within a Session (spec 3.4, 5.2).
func (m *Manager) Open(ctx context.Context, company string, opts Options) (*Session, error) {
	if err := checkIdentifier(company); err != nil {
		return nil, err
	}
	if opts.Anonymous && opts.Account != "" {
		return nil, errors.New("an anonymous browsing Session has no account (spec 5.1, 5.4)")
	}
	if opts.Version == "" {
		opts.Version = m.cfg.Version
	}
	ext, err := headers.FormatExtensions(opts.Extensions)
	if err != nil {
		return nil, err
	}
	key := sessKey{company, opts.Account, opts.Anonymous}
	m.mu.Lock()
	if s := m.sessions[key]; s != nil && s.Version == opts.Version && s.extHeader == ext && s.withAgentID == opts.AgentID {
		m.mu.Unlock()
		return s, nil
	}
	id := m.identityLocked(company, opts.Anonymous)
	m.mu.Unlock()

	if err := id.load(ctx, m, opts.AgentID); err != nil {
		return nil, err
	}
	s := &Session{
		m: m, id: id, Company: company, Account: opts.Account, Anonymous: opts.Anonymous,
		Version: opts.Version, Extensions: append([]Extension(nil), opts.Extensions...),
		extHeader: ext, withAgentID: opts.AgentID,
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.sessions[key]; cur != nil && cur.Version == opts.Version && cur.extHeader == ext && cur.withAgentID == opts.AgentID {
		return cur, nil // another goroutine opened it meanwhile
	}
	s.SID = m.newSIDLocked()
	if old := m.sessions[key]; old != nil {
		old.replaced.Store(true)
	}
	m.sessions[key] = s
	return s, nil
}

// Renew replaces s with a new Session with a new sid and the same identity, version and
// extensions: after session_ended (spec 5.5). The old Session stops signing.
func (m *Manager) Renew(ctx context.Context, s *Session) (*Session, error) {
	m.mu.Lock()
	key := sessKey{s.Company, s.Account, s.Anonymous}
	if cur := m.sessions[key]; cur == s {
		delete(m.sessions, key)
	}
	s.replaced.Store(true)
	m.mu.Unlock()
	return m.Open(ctx, s.Company, Options{Account: s.Account, Anonymous: s.Anonymous, AgentID: s.withAgentID, Version: s.Version, Extensions: s.Extensions})
}

// Close stops using s (spec 5.5: the Personal Agent stops using its sid). For an anonymous
// Session it also discards the anonymous User ID and its delegated key (spec 5.1).
func (m *Manager) Close(s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := sessKey{s.Company, s.Account, s.Anonymous}
	if m.sessions[key] == s {
		delete(m.sessions, key)
	}
	s.replaced.Store(true)
	if s.Anonymous && m.anon[s.Company] == s.id {
		delete(m.anon, s.Company)
		s.id.discard()
	}
}

func (m *Manager) identityLocked(company string, anonymous bool) *userIdentity {
	tbl := m.ids
	if anonymous {
		tbl = m.anon
	}
	id := tbl[company]
	if id == nil {
		id = &userIdentity{company: company, anonymous: anonymous}
		tbl[company] = id
	}
	return id
}

// newSIDLocked returns a random sid (spec 5.2: unguessable, never reused; characters of
// Conversation IDs, spec 8.2) that this Manager has never handed out.
func (m *Manager) newSIDLocked() string {
	for {
		sid := identity.NewID(16)
		if _, used := m.usedSIDs[sid]; !used {
			m.usedSIDs[sid] = struct{}{}
			return sid
		}
	}
}

func checkIdentifier(company string) error {
	u, err := url.Parse(company)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.ToLower(u.Host) != u.Host {
		return fmt.Errorf("%q is not a Company identifier: it must be an HTTPS issuer or https://{organization.domain} with a lowercase host (spec 3.2)", company)
	}
	return nil
}

// userIdentity is one User's identity at one Company: User ID, Agent ID and the current
// delegated key. Persistent identities live in the Company's account "" bundle, so the User ID
// is the same whichever account is signed in (spec 5.1: one User ID per User and Company);
// anonymous ones live only here.
type userIdentity struct {
	company   string
	anonymous bool

	mu      sync.Mutex // serializes loading and rotation
	loaded  bool
	userID  string
	agentID string
	cur     atomic.Pointer[delegatedKey]
}

type delegatedKey struct {
	priv     *ecdsa.PrivateKey
	kid      string
	notAfter time.Time
	prefix   []byte // base64url(header) + "." — fixed for this key (spec 5.2 Session JWT header)
}

func (id *userIdentity) discard() {
	id.mu.Lock()
	defer id.mu.Unlock()
	id.cur.Store(nil)
	id.userID, id.agentID = "", ""
	id.loaded = false
}

// load reads (or creates) the User ID, Agent ID and delegated key once.
func (id *userIdentity) load(ctx context.Context, m *Manager, wantAgent bool) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.loaded && (!wantAgent || id.agentID != "") {
		return nil
	}
	if id.anonymous {
		if id.userID == "" {
			id.userID = identity.NewID(18)
		}
		if wantAgent && id.agentID == "" {
			id.agentID = identity.NewID(18)
		}
		id.loaded = true
		return nil
	}
	b, err := m.cfg.Secrets.LoadCompany(ctx, id.company, "")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("reading the User ID for %s from the keyring: %w; unlock the keyring and try again", id.company, err)
	}
	if b == nil || b.UserID == "" || (wantAgent && b.AgentID == "") {
		b, err = m.cfg.Secrets.UpdateCompany(ctx, id.company, "", func(b *store.CompanyBundle) error {
			if b.UserID == "" {
				b.UserID = identity.NewID(18) // spec 5.1: random, never derived from personal data
			}
			if wantAgent && b.AgentID == "" {
				b.AgentID = identity.NewID(18)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("saving the User ID for %s in the keyring: %w; unlock the keyring and try again", id.company, err)
		}
	}
	id.userID, id.agentID = b.UserID, b.AgentID
	now := m.cfg.Now()
	if id.cur.Load() == nil {
		for i := len(b.Delegated) - 1; i >= 0; i-- {
			dk := b.Delegated[i]
			if dk.NotAfter.Sub(now) <= m.cfg.RotateBefore {
				continue
			}
			k, err := restoreKey(dk, m.cfg.Delegator.ClientID())
			if err != nil {
				m.cfg.Logger.WarnContext(ctx, "session: a stored delegated key is unusable; making a new one", "company", id.company, "err", err)
				break
			}
			id.cur.Store(k)
			break
		}
	}
	id.loaded = true
	return nil
}

func restoreKey(dk store.DelegatedKey, clientID string) (*delegatedKey, error) {
	k, err := jwk.ParseKey(dk.PrivateJWK)
	if err != nil {
		return nil, err
	}
	var priv ecdsa.PrivateKey
	if err := jwk.Export(k, &priv); err != nil {
		return nil, err
	}
	if priv.Curve != elliptic.P256() {
		return nil, errors.New("not a P-256 key")
	}
	if iss, err := delegationIssuer(dk.Delegation); err != nil || iss != clientID {
		return nil, fmt.Errorf("the stored delegation was issued for another client_id")
	}
	return newDelegatedKey(&priv, dk.Delegation, dk.NotAfter)
}

func delegationIssuer(dlg string) (string, error) {
	_, payload, _, err := jwsbb.SplitCompactString(dlg)
	if err != nil {
		return "", err
	}
	raw, err := base64.RawURLEncoding.DecodeString(string(payload))
	if err != nil {
		return "", err
	}
	var c struct {
		Iss string `json:"iss"`
	}
	return c.Iss, json.Unmarshal(raw, &c)
}

type sessionHeader struct {
	Typ string `json:"typ"`
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Dlg string `json:"poppy_dlg"`
}

func newDelegatedKey(priv *ecdsa.PrivateKey, delegation string, notAfter time.Time) (*delegatedKey, error) {
	_, kid, err := identity.PublicJWK(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	hdr, err := json.Marshal(sessionHeader{Typ: identity.SessionType, Alg: "ES256", Kid: kid, Dlg: delegation})
	if err != nil {
		return nil, err
	}
	prefix := base64.RawURLEncoding.AppendEncode(nil, hdr)
	prefix = append(prefix, '.')
	return &delegatedKey{priv: priv, kid: kid, notAfter: notAfter, prefix: prefix}, nil
}

// expiryMargin keeps a Session JWT from being signed with a delegation that expires before the
// Company can check it (spec 5.2: MUST NOT sign after the delegation's exp).
const expiryMargin = 30 * time.Second

// signingKey is the hot path: an atomic load and a clock read, unless the key needs rotating.
func (id *userIdentity) signingKey(ctx context.Context, m *Manager) (*delegatedKey, error) {
	now := m.cfg.Now()
	if k := id.cur.Load(); k != nil && k.notAfter.Sub(now) > m.cfg.RotateBefore {
		return k, nil
	}
	return id.rotate(ctx, m, now)
}

// rotate makes a new delegated key for this User ID only (spec 5.2: never shared between User IDs).
func (id *userIdentity) rotate(ctx context.Context, m *Manager, now time.Time) (*delegatedKey, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	old := id.cur.Load()
	if old != nil && old.notAfter.Sub(now) > m.cfg.RotateBefore {
		return old, nil // rotated by another goroutine
	}
	if !id.loaded {
		return nil, ErrSessionReplaced
	}
	k, err := id.newKey(ctx, m)
	if err != nil {
		if old != nil && old.notAfter.Sub(now) > expiryMargin {
			m.cfg.Logger.WarnContext(ctx, "session: could not rotate the delegated key; using the current one until it expires", "company", id.company, "not_after", old.notAfter, "err", err)
			return old, nil
		}
		return nil, err
	}
	id.cur.Store(k)
	return k, nil
}

func (id *userIdentity) newKey(ctx context.Context, m *Manager) (*delegatedKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a delegated key: %w", err)
	}
	dlg, exp, err := m.cfg.Delegator.Delegate(ctx, &priv.PublicKey, m.cfg.DelegationLifetime)
	if err != nil {
		return nil, fmt.Errorf("getting a delegation for a new delegated key: %w", err)
	}
	k, err := newDelegatedKey(priv, dlg, exp)
	if err != nil {
		return nil, err
	}
	if id.anonymous {
		return k, nil // spec 5.1: anonymous identities are never stored
	}
	pk, err := jwk.Import(priv)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(pk)
	if err != nil {
		return nil, err
	}
	now := m.cfg.Now()
	_, err = m.cfg.Secrets.UpdateCompany(ctx, id.company, "", func(b *store.CompanyBundle) error {
		if b.UserID != id.userID {
			return fmt.Errorf("the stored User ID for %s changed underneath this Session; reopen the Session", id.company)
		}
		kept := b.Delegated[:0]
		for _, d := range b.Delegated {
			if d.NotAfter.After(now) {
				kept = append(kept, d)
			}
		}
		b.Delegated = append(kept, store.DelegatedKey{PrivateJWK: raw, Thumbprint: k.kid, Delegation: dlg, NotAfter: exp})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("saving the new delegated key for %s in the keyring: %w", id.company, err)
	}
	return k, nil
}

// Session is one Session at one Company (spec 5): its sid, version and extensions are fixed.
type Session struct {
	m  *Manager
	id *userIdentity

	Company   string // the Company identifier: aud of every Session JWT (spec 3.2, 10.4)
	Account   string
	Anonymous bool
	SID       string
	Version   string
	// Extensions as declared in Poppy-Extensions. Do not modify.
	Extensions []Extension

	extHeader   string
	withAgentID bool
	replaced    atomic.Bool
	fixed       atomic.Pointer[fixedClaims] // appendClaims' cache
}

// ExtensionsHeader is the Poppy-Extensions value this Session sends ("" for none; spec 3.4).
func (s *Session) ExtensionsHeader() string { return s.extHeader }

// UserID returns the User ID this Session signs for (spec 5.1).
func (s *Session) UserID() string {
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	return s.id.userID
}

// AgentID returns the Agent ID this Session sends, or "" when it sends none.
func (s *Session) AgentID() string {
	if !s.withAgentID {
		return ""
	}
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	return s.id.agentID
}

type sessionClaims struct {
	Iss     string `json:"iss"`
	Aud     string `json:"aud"`
	Sid     string `json:"sid"`
	Sub     string `json:"sub"`
	AgentID string `json:"agent_id,omitempty"`
	Htm     string `json:"htm"`
	Htu     string `json:"htu"`
	Iat     int64  `json:"iat"`
	Jti     string `json:"jti"`
	Ath     string `json:"ath,omitempty"`
}

// SignRequest sets Poppy-Session (a fresh Session JWT for this request), Poppy-Version and
// Poppy-Extensions on req (spec 3.4, 5.2). accessToken is the token the request carries, "" when
// signed out; the JWT's ath binds it (spec 5.2). The caller sets the Authorization header itself.
// Once the delegated key is loaded, this reads no keyring.
func (s *Session) SignRequest(ctx context.Context, req *http.Request, accessToken string) error {
	if s.replaced.Load() {
		return ErrSessionReplaced
	}
	if accessToken != "" && s.Anonymous {
		return ErrAnonymousToken
	}
	htu, err := HTU(req.URL)
	if err != nil {
		return err
	}
	k, err := s.id.signingKey(ctx, s.m)
	if err != nil {
		return err
	}
	s.id.mu.Lock()
	sub, agent := s.id.userID, s.id.agentID
	s.id.mu.Unlock()
	if sub == "" {
		return ErrSessionReplaced // anonymous identity discarded
	}
	if !s.withAgentID {
		agent = ""
	}
	c := sessionClaims{
		Iss: s.m.cfg.Delegator.ClientID(), Aud: s.Company, Sid: s.SID, Sub: sub, AgentID: agent,
		Htm: req.Method, Htu: htu, Iat: s.m.cfg.Now().Unix(), Jti: identity.NewID(16),
	}
	if c.Htm == "" {
		c.Htm = http.MethodGet
	}
	if accessToken != "" {
		h := sha256.Sum256([]byte(accessToken))
		c.Ath = base64.RawURLEncoding.EncodeToString(h[:])
	}
	jwt, err := k.sign(s, &c)
	if err != nil {
		return err
	}
	req.Header.Set(headers.Session, jwt)
	setOnce(req.Header, headers.Version, s.Version)
	if s.extHeader != "" {
		setOnce(req.Header, headers.Extensions, s.extHeader)
	} else {
		req.Header.Del(headers.Extensions)
	}
	return nil
}

// setOnce sets header k to exactly v, leaving it alone when it already is (a transport that set
// the same Poppy-Version or Poppy-Extensions need not pay for a second copy).
func setOnce(h http.Header, k, v string) {
	if cur := h[k]; len(cur) == 1 && cur[0] == v {
		return
	}
	h.Set(k, v)
}

// sign returns the compact Session JWT: the fixed header prefix, the claims (appendClaims), and
// an ES256 signature made with jwx's jwsbb primitive.
func (k *delegatedKey) sign(s *Session, c *sessionClaims) (string, error) {
	enc := base64.RawURLEncoding
	// Assembled in pooled buffers: the string made of the JWT is the only copy kept.
	sc, _ := s.m.bufs.Get().(*signScratch)
	if sc == nil {
		sc = &signScratch{}
	}
	defer s.m.bufs.Put(sc)
	payload, err := s.appendClaims(sc.claims[:0], c)
	if err != nil {
		return "", err
	}
	sc.claims = payload
	buf := slices.Grow(sc.jwt[:0], len(k.prefix)+enc.EncodedLen(len(payload))+1+enc.EncodedLen(64))
	buf = append(buf, k.prefix...)
	buf = enc.AppendEncode(buf, payload)
	sig, err := jwsbb.Sign(k.priv, "ES256", buf, rand.Reader)
	if err != nil {
		return "", fmt.Errorf("signing the Session JWT: %w", err)
	}
	// Appended by hand: jwsbb.AppendSignature drops the signing input when it has to grow the
	// buffer (jwx v3.4.0); buf has room for the signature, so this does not allocate.
	buf = append(buf, '.')
	buf = enc.AppendEncode(buf, sig)
	sc.jwt = buf
	return string(buf), nil
}

// signScratch are the buffers one signature is assembled in (Manager.bufs).
type signScratch struct{ claims, jwt []byte }

// fixedClaims is the JSON of the claims every Session JWT of a Session shares (iss, aud, sid,
// sub and agent_id), as encoding/json writes it, without its closing brace.
type fixedClaims struct {
	iss, sub, agent string
	json            []byte
}

// appendClaims appends the claims' JSON object to dst: the Session's fixed claims, encoded once
// by encoding/json, then htm, htu, iat, jti and ath, which change with every request. Strings
// of printable ASCII without quotes or backslashes (a method, a URL, base64url IDs) are written
// as they are; any other string is encoded by encoding/json.
func (s *Session) appendClaims(dst []byte, c *sessionClaims) ([]byte, error) {
	f := s.fixed.Load()
	if f == nil || f.iss != c.Iss || f.sub != c.Sub || f.agent != c.AgentID {
		b, err := json.Marshal(struct {
			Iss     string `json:"iss"`
			Aud     string `json:"aud"`
			Sid     string `json:"sid"`
			Sub     string `json:"sub"`
			AgentID string `json:"agent_id,omitempty"`
		}{c.Iss, c.Aud, c.Sid, c.Sub, c.AgentID})
		if err != nil {
			return nil, err
		}
		f = &fixedClaims{iss: c.Iss, sub: c.Sub, agent: c.AgentID, json: b[:len(b)-1]}
		s.fixed.Store(f)
	}
	dst = append(dst, f.json...)
	dst = appendJSONString(append(dst, `,"htm":`...), c.Htm)
	dst = appendJSONString(append(dst, `,"htu":`...), c.Htu)
	dst = strconv.AppendInt(append(dst, `,"iat":`...), c.Iat, 10)
	dst = appendJSONString(append(dst, `,"jti":`...), c.Jti)
	if c.Ath != "" {
		dst = appendJSONString(append(dst, `,"ath":`...), c.Ath)
	}
	return append(dst, '}'), nil
}

// appendJSONString appends v as a JSON string.
func appendJSONString(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 || b > 0x7e || b == '"' || b == '\\' || b == '<' || b == '>' || b == '&' {
			q, _ := json.Marshal(v) // a string always encodes
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, v...)
	return append(dst, '"')
}

// HTU returns the htu of a request to u (spec 5.2, RFC 9449 §4.2): the URL without query and
// fragment, scheme and host in lowercase, without the default port, and path "/" when empty.
// Only HTTPS URLs carry Session JWTs (spec 3 "HTTPS").
func HTU(u *url.URL) (string, error) {
	if u == nil || !strings.EqualFold(u.Scheme, "https") || u.Host == "" {
		return "", fmt.Errorf("a Session JWT is sent only to HTTPS URLs, not %q (spec 3, 5.2)", redactURL(u))
	}
	host := strings.ToLower(u.Host)
	host = strings.TrimSuffix(host, ":443")
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	return "https://" + host + p, nil
}

func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.RawQuery, c.Fragment, c.User = "", "", nil
	return c.String()
}

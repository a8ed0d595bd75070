package operator

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/poppydesk/poppydesk/agentcore/identity"
)

// Config configures a [Server].
type Config struct {
	// PublicURL is the operator's base URL as devices and Companies reach it, e.g.
	// https://operator.example: client_id is PublicURL/agent.json, jwks_uri PublicURL/jwks.json.
	PublicURL string
	// ClientName is the client_name Companies show (default "Poppydesk").
	ClientName string
	// LogoURI is an HTTPS URL of the logo; "" publishes Logo (or the default logo) at
	// PublicURL/logo.png.
	LogoURI string
	// Logo is a PNG served at PublicURL/logo.png when LogoURI is "".
	Logo []byte
	// Keys are the operator's keys.
	Keys *KeySet
	// Store keeps devices, enrollment tokens and quotas.
	Store *Store
	// Enrollment is identity.EnrollmentToken (default) or identity.EnrollmentOpen.
	Enrollment string
	// PerHour and PerDay are each device's signature quota (defaults 200 and 2000).
	PerHour, PerDay int
	// OpenEnrollPerHour caps enrollments per hour over all devices when enrollment is open
	// (default 1000); EnrollPerAddress and EnrollPerNetwork cap them per source address and
	// network (defaults DefaultEnrollPerAddress and DefaultEnrollPerNetwork).
	OpenEnrollPerHour, EnrollPerAddress, EnrollPerNetwork int
	// EnrollPoWBits is the proof of work every open enrollment needs (identity.SolveEnrollPoW):
	// 0 is DefaultEnrollPoWBits, a negative value none. Token enrollment needs none.
	EnrollPoWBits int
	// MetricsToken, when set, lets /metrics answer on the service's own listener to requests
	// with "Authorization: Bearer MetricsToken"; without it /metrics is served only by
	// MetricsHandler (on a listener of its own). Signature volumes are not for everyone.
	MetricsToken string
	// TrustedProxies are the reverse proxies (load balancers) whose X-Forwarded-For names the
	// client's address; from any other peer the connection's address is the client's.
	TrustedProxies []netip.Prefix
	// Logger receives one JSON line per request and the service's events. It never receives a
	// device ID, a blinded message, a signature or an enrollment token.
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Server is the operator's HTTP service.
type Server struct {
	cfg      Config
	agent    *identity.Agent
	base     *url.URL
	prefix   string
	logo     []byte
	now      func() time.Time
	log      *slog.Logger
	draining atomic.Bool

	signatures, refused, enrolled atomic.Int64
}

// Paths below PublicURL.
const (
	pathMetadata = "/agent.json"
	pathJWKS     = "/jwks.json"
	pathLogo     = "/logo.png"
	pathEnroll   = "/v1/devices"
	pathSign     = "/v1/sign"
	maxBody      = 8 << 10
)

// New checks cfg and returns the Server.
func New(cfg Config) (*Server, error) {
	if cfg.Keys == nil || cfg.Store == nil {
		return nil, errors.New("operator: Config needs Keys and Store")
	}
	base, err := identity.OperatorBase(cfg.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("the public URL: %w", err)
	}
	u, _ := url.Parse(base)
	if cfg.Enrollment == "" {
		cfg.Enrollment = identity.EnrollmentToken
	}
	if cfg.Enrollment != identity.EnrollmentToken && cfg.Enrollment != identity.EnrollmentOpen {
		return nil, fmt.Errorf("the enrollment mode %q is neither %q nor %q", cfg.Enrollment, identity.EnrollmentToken, identity.EnrollmentOpen)
	}
	if cfg.PerHour == 0 {
		cfg.PerHour = 200
	}
	if cfg.PerDay == 0 {
		cfg.PerDay = 2000
	}
	if cfg.OpenEnrollPerHour == 0 {
		cfg.OpenEnrollPerHour = 1000
	}
	if cfg.EnrollPerAddress == 0 {
		cfg.EnrollPerAddress = DefaultEnrollPerAddress
	}
	if cfg.EnrollPerNetwork == 0 {
		cfg.EnrollPerNetwork = DefaultEnrollPerNetwork
	}
	switch {
	case cfg.Enrollment != identity.EnrollmentOpen || cfg.EnrollPoWBits < 0:
		cfg.EnrollPoWBits = 0
	case cfg.EnrollPoWBits == 0:
		cfg.EnrollPoWBits = DefaultEnrollPoWBits
	case cfg.EnrollPoWBits > identity.MaxEnrollPoWBits:
		return nil, fmt.Errorf("a proof of work of %d bits is more than devices do (%d)", cfg.EnrollPoWBits, identity.MaxEnrollPoWBits)
	}
	if cfg.PerHour < 0 || cfg.PerDay < 0 {
		return nil, errors.New("quotas must be positive")
	}
	s := &Server{cfg: cfg, base: u, prefix: strings.TrimSuffix(u.Path, "/"), logo: cfg.Logo, now: cfg.Now, log: cfg.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.logo == nil {
		s.logo = identity.DefaultLogoPNG()
	}
	s.agent, err = identity.New(identity.Config{ClientID: base + pathMetadata, ClientName: cfg.ClientName, LogoURI: cfg.LogoURI,
		JWKSURI: base + pathJWKS}, publisher{cfg.Keys}, s.now)
	if err != nil {
		return nil, fmt.Errorf("the operator's identity: %w", err)
	}
	return s, nil
}

// ClientID is the published client_id.
func (s *Server) ClientID() string { return s.agent.ClientID() }

// Metadata is the published client metadata document.
func (s *Server) Metadata() identity.Metadata { return s.agent.Metadata() }

// Drain makes /readyz answer 503, so a load balancer stops sending requests before shutdown.
func (s *Server) Drain() { s.draining.Store(true) }

// Stats are the counters since start (per instance).
type Stats struct {
	Signatures, Refused, Enrolled int64
}

// Stats returns the counters since start.
func (s *Server) Stats() Stats {
	return Stats{Signatures: s.signatures.Load(), Refused: s.refused.Load(), Enrolled: s.enrolled.Load()}
}

// publisher publishes the keys through identity.Agent; it never signs (the operator only signs
// blindly, through the sign endpoint).
type publisher struct{ ks *KeySet }

func (p publisher) SigningKey(context.Context) (string, jwa.SignatureAlgorithm, error) {
	return "", jwa.EmptySignatureAlgorithm(), errors.New("the operator signs only blindly")
}
func (p publisher) Sign(context.Context, string, jwa.SignatureAlgorithm, []byte) ([]byte, error) {
	return nil, errors.New("the operator signs only blindly")
}
func (p publisher) PublicKeys(context.Context) (jwk.Set, error) { return p.ks.PublicSet() }

// Handler serves the operator: the client metadata document, JWKS and logo (spec 4.1), the
// device configuration, enrollment and blind signatures, /healthz, /readyz and /metrics.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		route := s.serve(rw, r)
		// One line per request, with the route's name only: no device, no body, no query.
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", slog.String("method", r.Method), slog.String("route", route),
			slog.Int("status", rw.status), slog.Float64("ms", float64(time.Since(start).Microseconds())/1000))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) string {
	p := r.URL.Path
	switch p {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
		return "healthz"
	case "/readyz":
		s.ready(w, r)
		return "readyz"
	case "/metrics":
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if s.cfg.MetricsToken == "" || !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.MetricsToken)) != 1 {
			http.NotFound(w, r)
			return "metrics_refused"
		}
		s.metrics(w)
		return "metrics"
	}
	rest, ok := strings.CutPrefix(p, s.prefix)
	if !ok {
		http.NotFound(w, r)
		return "not_found"
	}
	switch rest {
	case pathMetadata, pathJWKS, pathLogo, identity.OperatorConfigPath:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, identity.OperatorErrRequest, "use GET")
			return "method"
		}
		s.document(w, r, rest)
		return strings.TrimPrefix(rest, "/")
	case pathEnroll, pathSign:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeError(w, http.StatusMethodNotAllowed, identity.OperatorErrRequest, "use POST")
			return "method"
		}
		if rest == pathEnroll {
			s.enroll(w, r)
			return "enroll"
		}
		s.sign(w, r)
		return "sign"
	}
	http.NotFound(w, r)
	return "not_found"
}

// MetricsHandler serves /metrics (Prometheus text: this instance's blind signatures, refusals
// and enrollments) to anyone who reaches it: serve it on a listener of its own, reachable only
// by the monitoring system.
func (s *Server) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		s.metrics(w)
	})
}

func (s *Server) metrics(w http.ResponseWriter) {
	st := s.Stats()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, "# HELP poppydesk_operator_blind_signatures_total Blind signatures made by this instance.\n# TYPE poppydesk_operator_blind_signatures_total counter\npoppydesk_operator_blind_signatures_total %d\n", st.Signatures)
	fmt.Fprintf(w, "# HELP poppydesk_operator_refused_total Sign and enroll requests refused by this instance.\n# TYPE poppydesk_operator_refused_total counter\npoppydesk_operator_refused_total %d\n", st.Refused)
	fmt.Fprintf(w, "# HELP poppydesk_operator_enrolled_total Devices enrolled by this instance.\n# TYPE poppydesk_operator_enrolled_total counter\npoppydesk_operator_enrolled_total %d\n", st.Enrolled)
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	var problems []string
	if s.draining.Load() {
		problems = append(problems, "shutting down")
	}
	if err := s.cfg.Store.Ping(ctx); err != nil {
		problems = append(problems, "the database does not answer")
	}
	if s.cfg.Keys.Current(s.now()) == nil {
		problems = append(problems, "no key signs yet (every key's Sign-From is in the future)")
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "not ready: "+strings.Join(problems, "; ")+"\n")
		return
	}
	io.WriteString(w, "ready\n")
}

// Config is the device configuration at this instant.
func (s *Server) Config() identity.OperatorConfig {
	now := s.now()
	c := identity.OperatorConfig{
		ClientID: s.agent.ClientID(), ClientName: s.agent.Metadata().ClientName, JWKSURI: s.agent.Metadata().JWKSURI,
		EnrollEndpoint: s.url(pathEnroll), SignEndpoint: s.url(pathSign), Enrollment: s.cfg.Enrollment,
		Variant: identity.BlindVariant, Alg: "PS384", Keys: s.cfg.Keys.Schedule(),
		Quota: identity.OperatorQuota{PerHour: s.cfg.PerHour, PerDay: s.cfg.PerDay}, Now: now.Unix(),
	}
	if k := s.cfg.Keys.Current(now); k != nil {
		c.SigningKid = k.Kid
	}
	if s.cfg.EnrollPoWBits > 0 {
		c.EnrollPoW = &identity.OperatorPoW{Alg: identity.PoWAlg, Bits: s.cfg.EnrollPoWBits}
	}
	return c
}

func (s *Server) url(p string) string { return s.base.String() + p }

func (s *Server) document(w http.ResponseWriter, r *http.Request, which string) {
	var body []byte
	var err error
	ctype, cache := "application/json", fmt.Sprintf("public, max-age=%d", int(CacheMaxAge.Seconds()))
	switch which {
	case pathMetadata:
		body, err = s.agent.MetadataJSON()
	case pathJWKS:
		body, err = s.agent.JWKSJSON(r.Context())
	case pathLogo:
		if s.cfg.LogoURI != "" {
			http.NotFound(w, r)
			return
		}
		body, ctype = s.logo, "image/png"
	case identity.OperatorConfigPath:
		body, err = json.Marshal(s.Config())
		cache = "no-store"
	}
	if err != nil {
		s.log.Error("cannot serve a published document", "document", which, "err", err)
		writeError(w, http.StatusServiceUnavailable, identity.OperatorErrUnavailable, "the operator cannot serve this document right now")
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", cache)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

func writeError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, identity.OperatorError{Code: code, Description: desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

// readRequest reads the body (at most maxBody bytes) and the device proof.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request) ([]byte, *identity.DeviceProof, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		writeError(w, http.StatusBadRequest, identity.OperatorErrRequest, "the request body is unreadable or larger than 8 KiB")
		return nil, nil, false
	}
	scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, identity.DeviceProofScheme) || raw == "" {
		writeError(w, http.StatusUnauthorized, identity.OperatorErrDevice, "the request carries no device proof (Authorization: "+identity.DeviceProofScheme+" …)")
		return nil, nil, false
	}
	proof, err := identity.ParseDeviceProof(raw)
	if err != nil {
		writeError(w, http.StatusUnauthorized, identity.OperatorErrDevice, err.Error())
		return nil, nil, false
	}
	return body, proof, true
}

func (s *Server) refuse(w http.ResponseWriter, status int, code, desc string) {
	s.refused.Add(1)
	writeError(w, status, code, desc)
}

func (s *Server) enroll(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, proof, ok := s.readRequest(w, r)
	if !ok {
		s.refused.Add(1)
		return
	}
	var req identity.EnrollRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.DeviceKey) == 0 {
		s.refuse(w, http.StatusBadRequest, identity.OperatorErrRequest, "the body must be {\"device_key\": JWK, \"token\": …}")
		return
	}
	now := s.now()
	if proof.Kid != "" || string(compactJSON(proof.JWK)) != string(compactJSON(req.DeviceKey)) {
		s.refuse(w, http.StatusUnauthorized, identity.OperatorErrDevice, "an enrollment's device proof carries the new device key in its jwk header, and no kid")
		return
	}
	if err := proof.Verify(req.DeviceKey, http.MethodPost, s.url(pathEnroll), body, now); err != nil {
		s.refuse(w, http.StatusUnauthorized, identity.OperatorErrDevice, err.Error())
		return
	}
	token := req.Token
	if s.cfg.Enrollment == identity.EnrollmentToken && token == "" {
		s.refuse(w, http.StatusUnauthorized, identity.OperatorErrToken, "this operator enrolls devices with an enrollment token from its administrator")
		return
	}
	counts := []Count(nil)
	var src source
	if s.cfg.Enrollment == identity.EnrollmentOpen {
		token = ""
		pub, err := jwk.ParseKey(req.DeviceKey)
		thumb := ""
		if err == nil {
			thumb, err = identity.Thumbprint(pub)
		}
		if err != nil || !identity.CheckEnrollPoW(s.url(pathEnroll), thumb, req.PoW, s.cfg.EnrollPoWBits) {
			s.refuse(w, http.StatusBadRequest, identity.OperatorErrRequest, fmt.Sprintf("the enrollment needs a proof of work of %d bits for this device key (%s); update Poppydesk", s.cfg.EnrollPoWBits, identity.PoWAlg))
			return
		}
		addr, err := s.clientAddr(r)
		if err != nil {
			s.log.Warn("an enrollment's source address is unknown", "err", err)
			s.refuse(w, http.StatusBadRequest, identity.OperatorErrRequest, "the operator cannot tell where this enrollment comes from; its administrator should check the proxy settings")
			return
		}
		src = sourceOf(addr)
		counts = s.enrollCounts(src)
	}
	// The proof's jti goes into the replay cache, with the open-enrollment counts, only now that
	// the request is known to be well-formed.
	if !s.use(ctx, w, proof.Claims.Jti, counts, now, func(oq *OverQuota) { s.tooMany(w, oq, now, s.enrollLimitWords(oq, src), false) }) {
		return
	}
	id := "dev_" + identity.NewID(16)
	err := s.cfg.Store.Enroll(ctx, id, compactJSON(req.DeviceKey), token, now)
	switch {
	case errors.Is(err, ErrBadToken):
		s.refuse(w, http.StatusUnauthorized, identity.OperatorErrToken, "the enrollment token is unknown, used up or expired")
		return
	case errors.Is(err, ErrKeyEnrolled):
		s.refuse(w, http.StatusConflict, identity.OperatorErrRequest, "this device key is enrolled already; every enrollment needs a new device key")
		return
	case err != nil:
		s.storeFailed(w, err)
		return
	}
	s.enrolled.Add(1)
	writeJSON(w, http.StatusOK, identity.EnrollResponse{DeviceID: id})
}

func compactJSON(raw []byte) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, _ := json.Marshal(v)
	return out
}

func (s *Server) storeFailed(w http.ResponseWriter, err error) {
	// The database's error text can quote values; only its class is logged.
	s.log.Error("the operator's database failed", "err_type", fmt.Sprintf("%T", err), "timeout", errors.Is(err, context.DeadlineExceeded))
	writeError(w, http.StatusServiceUnavailable, identity.OperatorErrUnavailable, "the operator cannot reach its database right now; try again shortly")
}

// tooMany answers 429 with Retry-After. what says which limit was met; unless it says the limit
// itself (withLimit false), the description adds it, and always when to ask again.
func (s *Server) tooMany(w http.ResponseWriter, oq *OverQuota, now time.Time, what string, withLimit bool) {
	s.refused.Add(1)
	wait := int(oq.Until.Sub(now).Seconds() + 0.999)
	if wait < 1 {
		wait = 1
	}
	if withLimit {
		what = fmt.Sprintf("%s (%d per %s)", what, oq.Limit, oq.Window)
	}
	w.Header().Set("Retry-After", strconv.Itoa(wait))
	writeJSON(w, http.StatusTooManyRequests, identity.OperatorError{Code: identity.OperatorErrQuota, RetryAfter: wait,
		Description: fmt.Sprintf("%s; ask again after %s, in %s", what,
			oq.Until.UTC().Format("2006-01-02 15:04:05 UTC"), (time.Duration(wait) * time.Second).String())})
}

func (s *Server) sign(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	body, proof, ok := s.readRequest(w, r)
	if !ok {
		s.refused.Add(1)
		return
	}
	if proof.Kid == "" {
		s.refuse(w, http.StatusUnauthorized, identity.OperatorErrDevice, "the device proof names no device (kid)")
		return
	}
	pub, err := s.cfg.Store.DeviceKey(ctx, proof.Kid)
	switch {
	case errors.Is(err, ErrUnknownDevice):
		s.refuse(w, http.StatusUnauthorized, identity.OperatorErrDevice, "this device is not enrolled here, or its enrollment was revoked")
		return
	case err != nil:
		s.storeFailed(w, err)
		return
	}
	now := s.now()
	if err := proof.Verify(pub, http.MethodPost, s.url(pathSign), body, now); err != nil {
		s.refuse(w, http.StatusUnauthorized, identity.OperatorErrDevice, err.Error())
		return
	}
	var req identity.SignRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.refuse(w, http.StatusBadRequest, identity.OperatorErrRequest, "the body must be {\"kid\": …, \"blinded_msg\": …}")
		return
	}
	key, err := s.cfg.Keys.forSigning(req.Kid, now)
	if err != nil {
		s.refused.Add(1)
		oe := identity.OperatorError{Code: identity.OperatorErrKeyNotSigning, Description: err.Error()}
		if cur := s.cfg.Keys.Current(now); cur != nil {
			oe.SigningKid = cur.Kid
		}
		writeJSON(w, http.StatusConflict, oe)
		return
	}
	// Everything a request can get wrong is refused here, before the quota counts it.
	blinded, err := base64.RawURLEncoding.DecodeString(req.BlindedMessage)
	if err != nil {
		s.refuse(w, http.StatusBadRequest, identity.OperatorErrRequest, "blinded_msg is not base64url")
		return
	}
	if _, err := key.signer.checkBlinded(blinded); err != nil {
		s.refuse(w, http.StatusBadRequest, identity.OperatorErrRequest, err.Error())
		return
	}
	counts := []Count{{proof.Kid, Limit{"hour", s.cfg.PerHour}}, {proof.Kid, Limit{"day", s.cfg.PerDay}}}
	if !s.use(ctx, w, proof.Claims.Jti, counts, now, func(oq *OverQuota) {
		s.tooMany(w, oq, now, "this device has had all the signatures it may have for now", true)
	}) {
		return
	}
	sig, err := key.signer.BlindSign(blinded)
	if err != nil {
		// The input was checked above: this is a fault of the operator (a failed check of its
		// own result, or no randomness), never the device's.
		s.log.Error("a blind signature failed", "kid", key.Kid, "err", err)
		s.refuse(w, http.StatusInternalServerError, identity.OperatorErrUnavailable, "the operator could not sign this time; try again")
		return
	}
	s.signatures.Add(1)
	writeJSON(w, http.StatusOK, identity.SignResponse{Kid: key.Kid, BlindSignature: base64.RawURLEncoding.EncodeToString(sig)})
}

// use records the proof's jti in the replay cache and counts one use under counts
// (Store.Use). On a refusal it answers — over a limit through over — and returns false.
func (s *Server) use(ctx context.Context, w http.ResponseWriter, jti string, counts []Count, now time.Time, over func(*OverQuota)) bool {
	err := s.cfg.Store.Use(ctx, jti, counts, now)
	var oq *OverQuota
	switch {
	case errors.As(err, &oq):
		over(oq)
	case errors.Is(err, ErrReplay):
		s.refuse(w, http.StatusUnauthorized, identity.OperatorErrDevice, "this device proof was already used; sign a new one for every request")
	case err != nil:
		s.storeFailed(w, err)
	default:
		return true
	}
	return false
}

// Prune runs the store's cleanup every interval until ctx ends.
func (s *Server) Prune(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.cfg.Store.Prune(ctx, s.now()); err != nil && ctx.Err() == nil {
			s.log.Warn("cleaning the operator's database failed", "err_type", fmt.Sprintf("%T", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

package webbridge

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/app/csp"
)

// DefaultCSP is the window's Content-Security-Policy (docs/DESIGN.md invariant 4): nothing remote,
// no inline script, no eval.
const DefaultCSP = csp.Policy

// CookieName is the name of the cookie that carries the token.
const CookieName = "poppydesk_bridge"

const (
	shimPath   = "/bridge/shim.js"
	callPath   = "/bridge/call"
	emitPath   = "/bridge/emit"
	eventsPath = "/bridge/events"
	maxBody    = 1 << 20
)

// Config configures a [Server].
type Config struct {
	// Assets is the built frontend, with index.html at its root.
	Assets fs.FS
	// Bind lists pointers to the structs the page may call, exposed as
	// window.go.<last element of the package path>.<type name>, like Wails does.
	Bind []any
	// CSP overrides [DefaultCSP].
	CSP string
	// Log receives request refusals and call failures; nil discards.
	Log *slog.Logger
}

// Server is a running browser-testable bridge.
type Server struct {
	cfg      Config
	token    string // the cookie's value
	oneTime  string // the first-load token of URL, traded once for the cookie
	hostport string // 127.0.0.1:PORT
	origin   string // http://127.0.0.1:PORT
	methods  map[string]reflect.Value
	shim     []byte
	ln       net.Listener
	srv      *http.Server
	hub      *hub
	log      *slog.Logger

	mu        sync.Mutex
	listeners map[string][]func(data ...any)
	used      bool // the first-load token was traded
}

// Start listens on addr (which must be a 127.0.0.1 address; port 0 picks a free port) and
// serves until ctx ends or Close is called.
func Start(ctx context.Context, addr string, cfg Config) (*Server, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Addr() != netip.MustParseAddr("127.0.0.1") {
		return nil, fmt.Errorf("the bridge address %q is not allowed: it must be 127.0.0.1:PORT (port 0 picks a free one), so that only this machine can reach it", addr)
	}
	if cfg.Assets == nil {
		return nil, errors.New("the bridge has no frontend to serve: build it with `npm run build` in frontend/ (or `make build`)")
	}
	if _, err := fs.Stat(cfg.Assets, "index.html"); err != nil {
		return nil, fmt.Errorf("the frontend has no index.html (%v): build it with `npm run build` in frontend/", err)
	}
	if cfg.CSP == "" {
		cfg.CSP = DefaultCSP
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	methods, manifest, err := reflectBindings(cfg.Bind)
	if err != nil {
		return nil, err
	}
	shim, err := buildShim(manifest)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 64) // the cookie's value, then the one-time first-load token
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("making the bridge token failed: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", ap.String())
	if err != nil {
		return nil, fmt.Errorf("the bridge could not listen on %s: %w; choose another port or 127.0.0.1:0", addr, err)
	}
	s := &Server{
		cfg:       cfg,
		token:     base64.RawURLEncoding.EncodeToString(tok[:32]),
		oneTime:   base64.RawURLEncoding.EncodeToString(tok[32:]),
		hostport:  ln.Addr().String(),
		methods:   methods,
		shim:      shim,
		ln:        ln,
		hub:       newHub(),
		log:       log,
		listeners: map[string][]func(data ...any){},
	}
	s.origin = "http://" + s.hostport
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("bridge server stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = s.Close()
	}()
	return s, nil
}

// URL is the first-load URL: it carries a one-time token, which the server trades for a cookie
// the first time it is loaded and refuses afterwards (a browser that already has the cookie is
// just sent on). The cookie's value is another secret, so the URL (printed, kept in a shell's
// history or a browser's) is worthless once used. Treat it as a secret until then: whoever
// loads it first can call the bound services.
func (s *Server) URL() string { return s.origin + "/?token=" + s.oneTime }

// Origin is http://127.0.0.1:PORT.
func (s *Server) Origin() string { return s.origin }

// Token is the per-start cookie value (for tests that build their own requests).
func (s *Server) Token() string { return s.token }

// Close ends the event streams and stops the server.
func (s *Server) Close() error {
	s.hub.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Emit sends an event to every open page (it implements app.Emitter). data must be
// JSON-encodable; an event that is not is logged and dropped.
func (s *Server) Emit(event string, data ...any) {
	if data == nil {
		data = []any{}
	}
	b, err := json.Marshal(struct {
		Name string `json:"name"`
		Data []any  `json:"data"`
	}{event, data})
	if err != nil {
		s.log.Error("bridge event dropped: its data is not JSON", "event", event, "err", err)
		return
	}
	s.hub.broadcast(b)
}

// On registers fn for events the page sends with window.runtime.EventsEmit.
func (s *Server) On(event string, fn func(data ...any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners[event] = append(s.listeners[event], fn)
}

// ServeHTTP applies the guards, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	csp.SetHeaders(h)
	h.Set("Content-Security-Policy", s.cfg.CSP)
	h.Set("Cache-Control", "no-store")

	if r.Host != s.hostport {
		s.refuse(w, r, http.StatusMisdirectedRequest, "this server answers only to "+s.hostport)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != s.origin {
		s.refuse(w, r, http.StatusForbidden, "requests from other origins are refused")
		return
	}
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs == "cross-site" || sfs == "same-site" {
		s.refuse(w, r, http.StatusForbidden, "cross-site requests are refused")
		return
	}
	if r.Method == http.MethodGet && r.URL.Query().Has("token") {
		switch {
		case s.trade(r.URL.Query().Get("token")):
			http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		case s.hasCookie(r):
			// The same browser loading the URL again: its cookie already lets it in.
		default:
			s.refuse(w, r, http.StatusUnauthorized, "the token is wrong or was already used (it is one-time); restart the window command for a new URL")
			return
		}
		u := *r.URL
		q := u.Query()
		q.Del("token")
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	if !s.hasCookie(r) {
		s.refuse(w, r, http.StatusUnauthorized, "open the URL printed at start (it carries a one-time token)")
		return
	}

	switch r.URL.Path {
	case callPath:
		s.serveCall(w, r)
	case emitPath:
		s.serveEmit(w, r)
	case eventsPath:
		s.serveEvents(w, r)
	case shimPath:
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		_, _ = w.Write(s.shim)
	default:
		s.serveAsset(w, r)
	}
}

func (s *Server) hasCookie(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.token)) == 1
}

// trade reports whether got is the first-load token and was not traded before; it is then
// used up.
func (s *Server) trade(got string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used || subtle.ConstantTimeCompare([]byte(got), []byte(s.oneTime)) != 1 {
		return false
	}
	s.used = true
	return true
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, why string) {
	s.log.Warn("bridge request refused", "path", r.URL.Path, "host", r.Host, "origin", r.Header.Get("Origin"), "status", code, "reason", why)
	http.Error(w, "Refused: "+why+".", code)
}

func (s *Server) serveAsset(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "Only GET is allowed here.", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	b, err := fs.ReadFile(s.cfg.Assets, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if name == "index.html" {
		b, err = injectShim(b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if ct := contentType(name); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	http.ServeContent(w, r, name, time.Time{}, strings.NewReader(string(b)))
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".json":
		return "application/json"
	case ".ico":
		return "image/x-icon"
	case ".woff2":
		return "font/woff2"
	}
	return ""
}

// injectShim puts the shim's script tag first in <head>, where Wails puts its runtime, so it
// runs before the app's module script.
func injectShim(index []byte) ([]byte, error) {
	s := string(index)
	i := strings.Index(strings.ToLower(s), "<head>")
	if i < 0 {
		return nil, errors.New("the frontend's index.html has no <head> element; the bridge cannot add its script")
	}
	i += len("<head>")
	return []byte(s[:i] + `<script src="` + shimPath + `"></script>` + s[i:]), nil
}

type callRequest struct {
	Name string            `json:"name"`
	Args []json.RawMessage `json:"args"`
}

type callResponse struct {
	Error string `json:"error"`
}

type callResult struct {
	Result any `json:"result"`
}

func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.Method != http.MethodPost {
		http.Error(w, "Bridge calls must be POST.", http.StatusMethodNotAllowed)
		return false
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "Bridge calls must have Content-Type application/json.", http.StatusUnsupportedMediaType)
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "The request body is too large or unreadable.", http.StatusRequestEntityTooLarge)
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeJSON(w, http.StatusBadRequest, callResponse{Error: "the request is not valid JSON: " + err.Error()})
		return false
	}
	return true
}

func (s *Server) serveCall(w http.ResponseWriter, r *http.Request) {
	var req callRequest
	if !s.readJSON(w, r, &req) {
		return
	}
	res, status, err := s.call(req.Name, req.Args)
	if err != nil {
		writeJSON(w, status, callResponse{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, callResult{Result: res})
}

func (s *Server) serveEmit(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
		Data []any  `json:"data"`
	}
	if !s.readJSON(w, r, &req) {
		return
	}
	s.mu.Lock()
	fns := append([]func(...any){}, s.listeners[req.Name]...)
	s.mu.Unlock()
	for _, fn := range fns {
		fn(req.Data...)
	}
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(callResponse{Error: "the result could not be encoded as JSON: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "Only GET is allowed here.", http.StatusMethodNotAllowed)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "Streaming is not supported.", http.StatusInternalServerError)
		return
	}
	ch, cancel := s.hub.subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, ": connected\n\n")
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			if _, err := fmt.Fprintf(w, "data: %s\n\n", msg); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// Method lists the callable names ("pkg.Struct.Method"), sorted.
func (s *Server) Methods() []string {
	names := make([]string, 0, len(s.methods))
	for n := range s.methods {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

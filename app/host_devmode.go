package app

// Developer mode: a developer aims Poppydesk at their own Company running on this machine.
//
// The rule for hosts: the developer names each Company under development by its domain
// (organization.domain, host[:port]), which must be a loopback name — localhost, a name under
// .localhost (RFC 6761 §6.3) or 127.0.0.1 — so that nothing developer mode allows can be a
// public host. The Company's hosts are that host and its subdomains: shop.localhost:8443 gives
// shop.localhost and *.shop.localhost (its issuer auth.shop.localhost, its www redirect, its
// APIs), on any port. Only these names may reach loopback (always 127.0.0.1), and the CA file
// given is trusted for them only (agentcore/transport: DevHosts, DevRootCAs); every other host
// keeps the production rules of spec 3. Turning developer mode off removes both.
//
// The settings are kept in the state database (settings key [SettingDeveloper]) and applied
// when the Host starts: a change made in the window is saved and takes effect at the next
// start (the Settings screen says so and offers no half-applied state), because the transport's
// policy and the identity's client_id are fixed for the engine's life.
//
// While it is on, Poppydesk serves its own client metadata, JWKS and logo (spec 4.1) on
// https://agent.localhost:PORT on loopback, with a certificate from its developer-mode CA
// (devca.go), so the developer's Company can fetch the client_id it registers. The port is
// chosen once and kept in the state database ([SettingDevAgentListen]), however developer mode
// is switched on (Settings or the --dev-company flags), so the client_id stays the same across
// starts.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// SettingDeveloper is the state setting that holds developer mode ([DeveloperSettings], JSON).
const SettingDeveloper = "developer.mode"

// SettingDevAgentListen is the state setting that keeps the loopback address developer mode
// first served Poppydesk's client metadata on, so its client_id stays the same across starts.
const SettingDevAgentListen = "developer.agent_listen"

// DeveloperSettings is developer mode as the user set it.
type DeveloperSettings struct {
	// Companies are the domains (host[:port]) of the Companies under development.
	Companies []string `json:"companies"`
	// CAFile is a PEM file of the CA that issued their certificates (mkcert's rootCA.pem, say).
	CAFile string `json:"ca_file,omitempty"`
	// AgentListen is the loopback address Poppydesk serves its client metadata on; set on the
	// first start ("": 127.0.0.1 with a free port, then kept).
	AgentListen string `json:"agent_listen,omitempty"`
}

// On reports whether any Company is named.
func (s DeveloperSettings) On() bool { return len(s.Companies) > 0 }

// DeveloperHosts is the host rule (file doc): for each domain, its host and its subdomains.
// A domain that is not a loopback name is refused.
func DeveloperHosts(domains []string) ([]string, error) {
	var out []string
	for _, d := range domains {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "" || strings.ContainsAny(d, "/?#@ ") || strings.Contains(d, "://") {
			return nil, fmt.Errorf("%q is not a domain; name the Company as host or host:port, such as shop.localhost:8443", d)
		}
		host := d
		if h, port, err := net.SplitHostPort(d); err == nil {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("%q has no valid port", d)
			}
			host = h
		}
		if !discovery.IsLoopbackName(host) {
			return nil, fmt.Errorf("%s is not a loopback name: developer mode reaches only localhost, names under .localhost and 127.0.0.1, so that it can never point at a public host; run the Company as, for example, shop.localhost", host)
		}
		out = append(out, host)
		if host != "127.0.0.1" && host != "localhost" {
			out = append(out, "*."+host)
		}
	}
	return out, nil
}

// DeveloperFrom builds the Host's developer mode from settings: the hosts of the named
// Companies and the CA file's certificates.
func DeveloperFrom(s DeveloperSettings) (Developer, error) {
	if !s.On() {
		return Developer{}, nil
	}
	hosts, err := DeveloperHosts(s.Companies)
	if err != nil {
		return Developer{}, err
	}
	d := Developer{Companies: append([]string(nil), s.Companies...), Hosts: hosts, CAFile: s.CAFile, AgentListen: s.AgentListen}
	if s.CAFile != "" {
		certs, err := ReadPEMCerts(s.CAFile)
		if err != nil {
			return Developer{}, err
		}
		d.RootCAs = certs
	}
	if d.AgentListen == "" {
		d.AgentListen = "127.0.0.1:0"
	}
	return d, nil
}

// loadDeveloperSettings reads developer mode from the state database (zero when unset).
func loadDeveloperSettings(ctx context.Context, st store.Settings) (DeveloperSettings, error) {
	var s DeveloperSettings
	v, err := st.GetSetting(ctx, SettingDeveloper)
	if errors.Is(err, store.ErrNotFound) || err == nil && v == "" {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading developer mode from the state database: %w", err)
	}
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return s, fmt.Errorf("the developer-mode setting does not parse (%w); turn developer mode off and on again in Settings", err)
	}
	return s, nil
}

// saveDeveloperSettings stores developer mode; zero settings turn it off.
func saveDeveloperSettings(ctx context.Context, st store.Settings, s DeveloperSettings) error {
	if !s.On() {
		return st.SetSetting(ctx, SettingDeveloper, "")
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return st.SetSetting(ctx, SettingDeveloper, string(b))
}

// DeveloperStatus is developer mode for the Settings screen: what this run applies, what is
// saved for the next start, and why saved settings could not be applied.
type DeveloperStatus struct {
	// Running is the developer mode this run applies (shown in the header's badge); in the
	// demo, the reference Company's hosts and CA, and Demo is set.
	Running Developer
	Demo    bool
	// ClientID is the client_id to register at the Company, served by Poppydesk itself on
	// loopback, and AgentCAFile the CA the Company must trust to fetch it ("" when developer
	// mode serves none).
	ClientID    string
	AgentCAFile string
	// Saved is what the state database holds for the next start; RestartNeeded is set when it
	// differs from what this run applies.
	Saved         DeveloperSettings
	RestartNeeded bool
	// Problem says why the saved settings could not be applied or read ("" when they could).
	Problem string
}

// DeveloperMode describes developer mode now and at the next start.
func (h *Host) DeveloperMode(ctx context.Context) DeveloperStatus {
	st := DeveloperStatus{Running: h.cfg.Developer, Demo: h.demo != nil, ClientID: h.DevClientID(), AgentCAFile: h.DevCAFile(), Problem: h.devProblem}
	if h.demo != nil {
		st.Running = h.demo.developer()
	}
	if h.state == nil {
		return st
	}
	saved, err := loadDeveloperSettings(ctx, h.state)
	if err != nil {
		st.Problem = err.Error()
		return st
	}
	st.Saved = saved
	if h.demo == nil {
		st.RestartNeeded = !slices.Equal(saved.Companies, h.devSaved.Companies) || saved.CAFile != h.devSaved.CAFile
	}
	return st
}

// SetDeveloper saves developer mode for the Companies named by domain (host[:port], loopback
// names only; empty names are dropped) with the CA file trusted for their hosts only. It takes
// effect when Poppydesk starts again (DeveloperStatus.RestartNeeded says so); the loopback
// address of Poppydesk's client metadata is kept, so its client_id stays the same. Refused,
// and nothing saved, for a name that is not a loopback name or a CA file that does not parse.
func (h *Host) SetDeveloper(ctx context.Context, companies []string, caFile string) error {
	if err := h.settable(); err != nil {
		return err
	}
	var clean []string
	for _, c := range companies {
		if c != "" {
			clean = append(clean, c)
		}
	}
	ds := DeveloperSettings{Companies: clean, CAFile: caFile}
	saved, _ := loadDeveloperSettings(ctx, h.state)
	ds.AgentListen = saved.AgentListen
	if ds.AgentListen == "" && h.agentSrv != nil {
		ds.AgentListen = h.devSaved.AgentListen
	}
	if _, err := DeveloperFrom(ds); err != nil {
		return err
	}
	if err := saveDeveloperSettings(ctx, h.state, ds); err != nil {
		return err
	}
	h.log.Info("developer mode saved for the next start", "companies", ds.Companies, "ca_file", ds.CAFile)
	return nil
}

// DisableDeveloper turns developer mode off at the next start: no host under development, no
// CA trusted.
func (h *Host) DisableDeveloper(ctx context.Context) error {
	if err := h.settable(); err != nil {
		return err
	}
	return saveDeveloperSettings(ctx, h.state, DeveloperSettings{})
}

// agentServer is the loopback HTTPS listener that serves Poppydesk's client metadata in
// developer mode; its handler is set once the identity exists. Each request a Company sends it
// goes to observe, when set, as an incoming exchange for the Inspector.
type agentServer struct {
	handler atomic.Pointer[http.Handler]
	observe atomic.Pointer[func(store.Exchange)]
	srv     *http.Server
	port    int
	caPath  string
}

func (a *agentServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recordingWriter{ResponseWriter: w}
	if h := a.handler.Load(); h != nil {
		(*h).ServeHTTP(rec, r)
	} else {
		http.Error(rec, "Poppydesk is starting", http.StatusServiceUnavailable)
	}
	if obs := a.observe.Load(); obs != nil {
		u := &url.URL{Scheme: "https", Host: r.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
		d := &inspect.Details{Cause: &inspect.Cause{Kind: inspect.CauseCompany, Name: "a Company fetched Poppydesk's client metadata or keys",
			Detail: r.UserAgent()}}
		(*obs)(store.Exchange{At: start, Direction: "incoming", Method: r.Method, URL: redact.URL(u), Status: rec.status(),
			RequestHeaders: redact.Header(r.Header), ResponseHeaders: redact.Header(rec.Header()), ResponseBody: redact.JSON(rec.body),
			Duration: time.Since(start), Details: d.Marshal()})
	}
}

// recordingWriter keeps the status and the start of the body (64 KiB) of an answer.
type recordingWriter struct {
	http.ResponseWriter
	code int
	body []byte
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if room := 64<<10 - len(w.body); room > 0 {
		w.body = append(w.body, b[:min(room, len(b))]...)
	}
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// recordIncoming stores an exchange a Company sent to Poppydesk in the exchange log, so the
// Inspector shows it beside Poppydesk's own.
func (h *Host) recordIncoming(ex store.Exchange) {
	ctx, cancel := context.WithTimeout(h.Context(), 10*time.Second)
	defer cancel()
	if _, err := h.state.AddExchange(ctx, ex); err != nil {
		h.log.Warn("could not store a Company's fetch of the client metadata in the Inspector's log", "url", ex.URL, "err", err)
		return
	}
	h.relay.Emit(EventInspector)
}

// openDeveloper applies developer mode: the settings in the state database when the Config
// names none, and, when it is on outside the demo, the loopback listener for Poppydesk's client
// metadata, whose URL becomes the client_id unless the Config names one.
func (h *Host) openDeveloper(ctx context.Context) error {
	if h.demo != nil {
		return nil
	}
	if !h.cfg.Developer.On() {
		s, err := loadDeveloperSettings(ctx, h.state)
		if err != nil {
			h.log.Warn("developer mode could not be read; it stays off", "err", err)
			return nil
		}
		d, err := DeveloperFrom(s)
		if err != nil {
			h.log.Warn("developer mode is set but cannot be applied; it stays off", "err", err)
			h.devProblem = err.Error()
			return nil
		}
		h.cfg.Developer = d
		h.devSaved = s
	}
	d := h.cfg.Developer
	if !d.On() || d.AgentListen == "" {
		return nil
	}
	listen := d.AgentListen
	if _, port, _ := net.SplitHostPort(listen); port == "0" {
		if kept, err := h.state.GetSetting(ctx, SettingDevAgentListen); err == nil && kept != "" {
			listen = kept
		}
	}
	a, err := startDevAgent(ctx, h.cfg.Paths, listen, h.now(), h.log)
	if err != nil && listen != d.AgentListen {
		h.log.Warn("developer mode's kept port is taken; Poppydesk's client_id changes with a new port: register the new one with your Company", "kept", listen, "err", err)
		a, err = startDevAgent(ctx, h.cfg.Paths, d.AgentListen, h.now(), h.log)
	}
	if err != nil {
		return err
	}
	rec := h.recordIncoming
	a.observe.Store(&rec)
	host, _, _ := net.SplitHostPort(listen)
	if kept := net.JoinHostPort(host, strconv.Itoa(a.port)); kept != listen {
		if err := h.state.SetSetting(ctx, SettingDevAgentListen, kept); err != nil {
			h.log.Warn("developer mode's port could not be kept", "err", err)
		}
	}
	h.agentSrv = a
	h.onClose("developer mode's client metadata listener", func(ctx context.Context) error { return a.srv.Shutdown(ctx) })
	if h.devSaved.On() && h.devSaved.AgentListen == "" {
		// Keep the port, so the client_id the developer registered stays the same.
		h.devSaved.AgentListen = net.JoinHostPort(host, strconv.Itoa(a.port))
		if err := saveDeveloperSettings(ctx, h.state, h.devSaved); err != nil {
			h.log.Warn("developer mode's port could not be kept", "err", err)
		}
	}
	if h.cfg.ClientID == "" {
		h.cfg.ClientID = h.DevClientID()
	}
	h.log.Info("developer mode on", "companies", d.Companies, "hosts", d.Hosts, "ca_file", d.CAFile, "client_id", h.DevClientID())
	return nil
}

// startDevAgent listens on a loopback address with a certificate from the developer-mode CA.
// A TLS handshake a Company refuses (it does not trust developer mode's CA yet) is logged
// through log at Info, not printed on stderr; nil discards those lines.
func startDevAgent(ctx context.Context, p Paths, listen string, now time.Time, log *slog.Logger) (*agentServer, error) {
	host, _, err := net.SplitHostPort(listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("developer mode serves Poppydesk's client metadata only on a loopback address, not %q", listen)
	}
	ca, err := loadDevCA(p, now)
	if err != nil {
		return nil, fmt.Errorf("developer mode's CA: %w", err)
	}
	leaf, err := ca.leaf(now)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("developer mode could not listen on %s for Poppydesk's client metadata: %w; free the port or change agent_listen", listen, err)
	}
	a := &agentServer{port: ln.Addr().(*net.TCPAddr).Port, caPath: ca.certPath}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.With("part", "developer mode's client metadata listener").Handler(), slog.LevelInfo)}
	go a.srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}))
	return a, nil
}

// DevClientID is the client_id developer mode serves ("" when it serves none).
func (h *Host) DevClientID() string {
	if h.agentSrv == nil {
		return ""
	}
	return devClientID(h.agentSrv.port)
}

// DevCAFile is the developer-mode CA certificate the developer's Company must trust ("" when
// developer mode serves nothing).
func (h *Host) DevCAFile() string {
	if h.agentSrv == nil {
		return ""
	}
	return h.agentSrv.caPath
}

// mountAgent serves the engine's identity on the developer-mode listener.
func (h *Host) mountAgent() {
	if h.agentSrv == nil || h.engine == nil {
		return
	}
	var handler http.Handler = h.engine.Agent().Handler(h.log)
	h.agentSrv.handler.Store(&handler)
}

// ReadPEMCerts reads the certificates of a PEM file (a CA file for developer mode).
func ReadPEMCerts(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the developer CA file: %w", err)
	}
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("the developer CA file %s holds an invalid certificate: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the developer CA file %s holds no PEM certificate", path)
	}
	return out, nil
}

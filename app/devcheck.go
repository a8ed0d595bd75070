package app

// The developer-mode identity of `poppydesk check` (spec 4.1): the client_id it acts as and
// the keys behind it, chosen so that the client_id a developer registered with their Company is
// the one check uses, run after run.
//
// The rule, in order:
//
//  1. check acts as the window's developer-mode identity: the client_id at the loopback address
//     the window keeps ([SettingDevAgentListen], or the saved settings' agent_listen), signed
//     with the window's keys when the OS keyring is reachable (the same root key the window's
//     engine keeps there, spec 4.1). When no window holds that address, check serves the client
//     metadata there itself; on a machine where no window has run in developer mode yet, check
//     picks the address and keeps it for the window, the same way the window does.
//  2. When the address is taken, check asks what is served there: a running window in
//     developer mode with the same keys answers, and check uses its client_id without serving
//     anything (the Company fetches the window's metadata and finds the keys check signs with).
//  3. Otherwise (no keyring, as in a Company's CI; an operator enrolled in the window, whose
//     identity the window then shows; another program on the port), check serves a client_id
//     of its own at an address it keeps apart ([SettingDevCheckListen]), the same at every run,
//     and says so: the developer registers that client_id once too.
//
// Without a keyring check signs with keys made for the run, since it keeps no secret outside
// the keyring; a Company that caches client metadata by client_id then fetches it again once
// its cache expires.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// SettingDevCheckListen keeps the loopback address `poppydesk check` serves a client_id of its
// own on when the window's is taken by something that does not serve check's keys, so that
// client_id too stays the same across runs.
const SettingDevCheckListen = "developer.check_listen"

// CheckAgent is the developer-mode identity `poppydesk check` acts as.
type CheckAgent struct {
	// ClientID is the client_id to register at the Company; CAFile the developer CA the Company
	// must trust to fetch it.
	ClientID, CAFile string
	// Window is set when ClientID is the window's developer-mode client_id.
	Window bool
	// How says in words where ClientID is served and whether the developer registers it.
	How      string
	Agent    *identity.Agent
	Operator identity.Operator
	srv      *agentServer // nil when the running window serves ClientID
}

// Close stops serving the client metadata (if check serves it).
func (c *CheckAgent) Close(ctx context.Context) error {
	if c.srv == nil {
		return nil
	}
	return c.srv.srv.Shutdown(ctx)
}

// OpenCheckAgent chooses check's developer-mode identity by the rule of the file doc in the
// data folder p. secrets is the OS keyring (nil when none is reachable: keys made for this run);
// listen, when not "", is the address to serve on instead of the kept ones (--agent-listen).
func OpenCheckAgent(ctx context.Context, p Paths, secrets store.Secrets, listen, name string, now func() time.Time) (*CheckAgent, error) {
	keyring := secrets != nil
	if !keyring {
		secrets = store.NewSecrets(store.NewMemoryKV())
	}
	op := identity.NewLocalOperator(secrets, now)
	c := &CheckAgent{Operator: op}
	serve := func(addr string) error {
		a, err := startDevAgent(ctx, p, addr, now(), nil)
		if err != nil {
			return err
		}
		c.srv, c.ClientID, c.CAFile = a, devClientID(a.port), a.caPath
		return nil
	}
	if listen != "" {
		if err := serve(listen); err != nil {
			return nil, err
		}
		c.How = "served by check on --agent-listen " + listen
		return c, c.mount(name, now)
	}

	if err := p.Create(); err != nil {
		return nil, fmt.Errorf("creating Poppydesk's data folder for developer mode failed: %w", err)
	}
	path := filepath.Join(p.Data, StateFile)
	st, err := vault.OpenState(ctx, path, vault.StateOptions{PruneLater: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("opening the state database %s to find developer mode's kept client_id failed: %w; check the data folder's permissions", path, err)
	}
	defer st.Close()
	keep := func(setting string) {
		if err := st.SetSetting(ctx, setting, net.JoinHostPort("127.0.0.1", strconv.Itoa(c.srv.port))); err != nil {
			c.How += fmt.Sprintf("; keeping its port failed (%v), so the next run may use another", err)
		}
	}

	window := windowDevListen(ctx, st)
	if window == "" {
		if err := serve("127.0.0.1:0"); err != nil {
			return nil, err
		}
		keep(SettingDevAgentListen)
		c.Window, c.How = true, "developer mode's client_id, chosen now and kept: the window uses the same one"
		return c, c.mount(name, now)
	}
	if serve(window) == nil {
		c.Window, c.How = true, "the window's developer-mode client_id, served by check while no window holds its port"
		return c, c.mount(name, now)
	}
	windowID := devClientID(portOf(window))
	c.Window, c.ClientID = true, windowID
	if err := c.mount(name, now); err != nil {
		return nil, err
	}
	why := "no keyring is reachable, so check cannot sign with the window's keys"
	if keyring {
		if why = servesKeys(ctx, p, windowID, op, now()); why == "" {
			ca, err := loadDevCA(p, now())
			if err != nil {
				return nil, fmt.Errorf("developer mode's CA: %w", err)
			}
			c.CAFile, c.How = ca.certPath, "the window's developer-mode client_id, served by the running window with the keys check signs with"
			return c, nil
		}
	}

	c.Window = false
	own, _ := st.GetSetting(ctx, SettingDevCheckListen)
	if own == "" || serve(own) != nil {
		if err := serve("127.0.0.1:0"); err != nil {
			return nil, err
		}
		keep(SettingDevCheckListen)
	}
	c.How = fmt.Sprintf("check's own: the window's client_id %s is served by something else (%s), so check serves its own, kept for every check run: register this client_id once with your Company", windowID, why)
	return c, c.mount(name, now)
}

// mount builds the identity for c.ClientID and serves it when check serves the client metadata.
func (c *CheckAgent) mount(name string, now func() time.Time) error {
	a, err := identity.New(identity.Config{ClientID: c.ClientID, ClientName: name}, c.Operator, now)
	if err != nil {
		return err
	}
	c.Agent = a
	if c.srv != nil {
		h := a.Handler(nil)
		c.srv.handler.Store(&h)
	}
	return nil
}

// windowDevListen is the loopback address the window serves its developer-mode client metadata
// on (openDeveloper): the saved settings' agent_listen, else the kept address ("" when none).
func windowDevListen(ctx context.Context, st store.Settings) string {
	if s, err := loadDeveloperSettings(ctx, st); err == nil && s.On() && portOf(s.AgentListen) > 0 {
		return s.AgentListen
	}
	if v, err := st.GetSetting(ctx, SettingDevAgentListen); err == nil && portOf(v) > 0 {
		return v
	}
	return ""
}

func portOf(addr string) int {
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return n
}

func devClientID(port int) string {
	return "https://" + DevAgentHost + ":" + strconv.Itoa(port) + "/agent.json"
}

// servesKeys fetches the client metadata at clientID (served on loopback with the developer
// CA of p) and its JWKS, as a Company would (spec 4.1), and reports why they are not op's
// identity ("" when they are: the metadata names clientID and the JWKS holds op's signing key).
func servesKeys(ctx context.Context, p Paths, clientID string, op identity.Operator, now time.Time) string {
	ca, err := loadDevCA(p, now)
	if err != nil {
		return "developer mode's CA: " + err.Error()
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	var d net.Dialer
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port)) // agent.localhost is loopback
		},
	}}
	defer client.CloseIdleConnections()
	get := func(u string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		res, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s answered HTTP %d", u, res.StatusCode)
		}
		return io.ReadAll(io.LimitReader(res.Body, 1<<20))
	}
	b, err := get(clientID)
	var md identity.Metadata
	if err == nil {
		err = json.Unmarshal(b, &md)
	}
	if err == nil && md.ClientID != clientID {
		err = fmt.Errorf("the metadata there names the client_id %q", md.ClientID)
	}
	if u, perr := url.Parse(md.JWKSURI); err == nil && (perr != nil || u.Hostname() != DevAgentHost) {
		err = fmt.Errorf("its jwks_uri %q is not on %s", md.JWKSURI, DevAgentHost)
	}
	var set jwk.Set
	if err == nil {
		if b, err = get(md.JWKSURI); err == nil {
			set, err = jwk.Parse(b)
		}
	}
	if err != nil {
		return "fetching it failed: " + err.Error()
	}
	kid, _, err := op.SigningKey(ctx)
	if err != nil {
		return "reading check's key failed: " + err.Error()
	}
	if _, ok := set.LookupKeyID(kid); !ok {
		return "its keys are not the ones check signs with, as when the window signs through an operator"
	}
	return ""
}

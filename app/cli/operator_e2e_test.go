//go:build !desktop

package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// child is a `poppydesk` process started by a test.
type child struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	line   string
	done   chan error
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	return startChildEnv(t, os.Environ(), args...)
}

// startChildEnv starts `poppydesk args…` with exactly env (and the switch that makes the test
// binary run as poppydesk).
func startChildEnv(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append([]string(nil), env...), envCLIMain+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() { c.stop(t) })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("poppydesk %s printed nothing: %v; stderr:\n%s", strings.Join(args, " "), err, c.stderr.String())
	}
	go io.Copy(io.Discard, out)
	c.line = line
	return c
}

// stop sends SIGTERM and waits for a clean exit.
func (c *child) stop(t *testing.T) error {
	if c.cmd.ProcessState != nil {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		return err
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		t.Errorf("%v did not stop within 30 s of SIGTERM", c.cmd.Args[1:3])
		return errors.New("killed")
	}
}

// TestOperatorEndToEnd runs the operator (`poppydesk operator serve`, with TLS on loopback),
// the reference Company (`poppydesk company serve`, fetching the operator's metadata as an
// Agent host under development) as separate processes, and Poppydesk — the Host built by
// app.New — enrolled with `poppydesk operator enroll`. Direct Sign-In, a refresh, signed-out
// and signed-in requests all use client assertions and delegations that the device wrote and
// the operator signed blindly; the operator's JWKS holds only RSA keys, so the Company verified
// every one as PS384. Then a canary over the operator's database file and logs finds none of
// the Company's identifiers, User IDs, delegations or their jtis (controls: the device ID in
// the database, the routes in the logs). Last, the operator stops cleanly on SIGTERM, and the
// Host says so when it needs a signature, while Sessions keep their current delegations.
func TestOperatorEndToEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env := testEnv(dir)

	// The operator's TLS certificate for operator.localhost, from a CA of this test.
	opTLS := poppytest.NewServerTLS(t, dir, "operator.localhost")
	ca, caFile, certFile, keyFile := opTLS.CA, opTLS.CAFile, opTLS.CertFile, opTLS.KeyFile
	keyPEM, db := filepath.Join(dir, "operator-key.pem"), filepath.Join(dir, "operator.sqlite")
	if code, out, errs := runCLI(t, env, "operator", "keygen", "--out", keyPEM, "--bits", "2048"); code != 0 || !strings.Contains(out, "kid") {
		t.Fatalf("keygen: %d %s %s", code, out, errs)
	}
	code, tok, errs := runCLI(t, env, "operator", "enroll-token", "--db", "sqlite:"+db)
	if code != 0 || !strings.HasPrefix(tok, "ppd_enroll_") {
		t.Fatalf("enroll-token: %d %q %s", code, tok, errs)
	}
	tok = strings.TrimSpace(tok)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	opURL := fmt.Sprintf("https://operator.localhost:%d", port)
	op := startChild(t, "operator", "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--public-url", opURL, "--key", keyPEM,
		"--db", "sqlite:"+db, "--tls-cert", certFile, "--tls-key", keyFile, "--client-name", "Poppydesk Cloud (test)", "--metrics-listen", "127.0.0.1:0")
	var opInfo operatorServeInfo
	if err := json.Unmarshal([]byte(op.line), &opInfo); err != nil || opInfo.ClientID != opURL+"/agent.json" {
		t.Fatalf("operator serve printed %q (%v)", op.line, err)
	}
	company := startChild(t, "company", "serve", "--agent-host", "operator.localhost", "--agent-ca", caFile)
	var co companyServeInfo
	if err := json.Unmarshal([]byte(company.line), &co); err != nil {
		t.Fatalf("company serve printed %q (%v)", company.line, err)
	}
	companyCA, err := app.ReadPEMCerts(co.CACert)
	if err != nil {
		t.Fatal(err)
	}

	// The device enrolls, then Poppydesk starts signing through the operator.
	if code, out, errs := runCLI(t, env, "operator", "enroll", opURL, "--token", tok, "--dev-ca", caFile, "--dev-allow-loopback"); code != 0 {
		t.Fatalf("operator enroll: %d %s %s", code, out, errs)
	}
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	browser := userBrowser(t, companyCA[0])
	h, err := app.New(ctx, app.Config{Version: "test", Paths: paths, Secrets: env.Secrets, Socket: app.NoSocket,
		Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" },
		Developer: app.Developer{Hosts: append(append([]string{}, co.DevHosts...), "operator.localhost"), RootCAs: append(companyCA, ca.Cert)},
		Opener:    app.OpenerFunc(func(u string) error { go browser.approve(u); return nil }),
		Notifier:  app.NotifierFunc(func(string, string) {}), Tuning: app.Tuning{DirectTimeout: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.CloseWithin(5 * time.Second)
	if h.Problem() != nil || h.ClientID() != opInfo.ClientID {
		t.Fatalf("the Host signs as %q (problem %v), want the operator's %s", h.ClientID(), h.Problem(), opInfo.ClientID)
	}
	if id := h.Identity(ctx); id.Mode != app.IdentityOperator || id.Operator != opURL || id.Restart {
		t.Fatalf("Identity = %+v", id)
	}
	if st := h.CheckOperator(ctx); !st.Reachable || st.SigningKid != opInfo.SigningKid {
		t.Fatalf("CheckOperator = %+v", st)
	}
	company_, err := h.Engine().Discover(ctx, co.Domain)
	if err != nil {
		t.Fatal(err)
	}
	products, orders := "https://"+co.Domain+"/api/products", "https://"+co.Domain+"/api/orders"
	request := func(account, u string) int {
		t.Helper()
		c, err := h.Engine().Client(ctx, company_.Identifier, account)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(ctx, &transport.Request{Method: http.MethodGet, URL: u})
		if err != nil {
			t.Fatalf("GET %s as %q: %v", u, account, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.SignedOut && account != "" {
			t.Fatalf("GET %s as %q went signed out", u, account)
		}
		return resp.StatusCode
	}
	// Signed out: a Session JWT whose delegation the operator signed blindly.
	if code := request("", products); code != 200 {
		t.Fatalf("signed-out request: %d", code)
	}
	// Direct Sign-In through the window's service: the code exchange carries a blind-signed
	// client assertion.
	signIn := fronts.New(h).SignIn
	view, err := signIn.StartDirect(company_.Identifier, "personal", []string{"orders:read"}, "")
	if err != nil {
		t.Fatal(err)
	}
	waitSignIn(t, signIn, view.ID)
	if code := request("personal", orders); code != 200 {
		t.Fatalf("signed-in request: %d", code)
	}
	if _, err := h.OAuth().Refresh(ctx, company_, "personal", ""); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if code := request("personal", orders); code != 200 {
		t.Fatalf("signed-in request after the refresh: %d", code)
	}
	// What the Company verified: the delegations are PS384, by the operator's only key.
	b, err := env.Secrets.LoadCompany(ctx, company_.Identifier, "")
	if err != nil || len(b.Delegated) == 0 {
		t.Fatalf("no delegation in the keyring: %v", err)
	}
	if hdr := jwtHeader(t, b.Delegated[0].Delegation); hdr["alg"] != "PS384" || hdr["kid"] != opInfo.SigningKid {
		t.Fatalf("the delegation's header = %v, want PS384 by %s", hdr, opInfo.SigningKid)
	}
	jwks := httpGet(t, h, opURL+"/jwks.json")
	if !strings.Contains(jwks, `"kty":"RSA"`) && !strings.Contains(jwks, `"kty": "RSA"`) || strings.Contains(jwks, `"EC"`) {
		t.Fatalf("the operator's JWKS holds other than RSA keys: %s", jwks)
	}
	// /metrics is not on the public listener, only on its own.
	if resp, err := h.Engine().Transport().NoRedirectClient().Get(opURL + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/metrics on the public listener: %v %v, want 404", resp, err)
	}
	mresp, err := http.Get("http://" + opInfo.MetricsListen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	metrics := string(mb)
	sigs := -1
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, "poppydesk_operator_blind_signatures_total "); ok {
			fmt.Sscanf(v, "%d", &sigs)
		}
	}
	if sigs < 3 { // the User's delegation, the code exchange's assertion and the refresh's
		t.Fatalf("the operator made %d blind signatures, want at least 3:\n%s", sigs, metrics)
	}

	// SIGTERM: the operator drains and exits 0.
	if err := op.stop(t); err != nil {
		t.Fatalf("the operator did not exit cleanly on SIGTERM: %v\n%s", err, op.stderr.String())
	}
	logs := op.stderr.String()
	if !strings.Contains(logs, `"msg":"operator stopped"`) {
		t.Fatalf("the operator's logs do not say it stopped:\n%s", logs)
	}
	canaryOverOperator(t, env, company_, db, logs)

	// Without the operator: a signature is a clear error; the current delegation still works.
	_, err = h.OAuth().Refresh(ctx, company_, "personal", "")
	var ue *identity.OperatorUnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("a refresh with the operator down: %v, want the operator-unreachable error", err)
	}
	if code := request("", products); code != 200 {
		t.Fatalf("a signed-out request with the current delegation, the operator down: %d", code)
	}
}

// canaryOverOperator scans the operator's database file (with its WAL) and logs for what only
// the device and the Company may know.
func canaryOverOperator(t *testing.T, env Env, co *discovery.Company, db, logs string) {
	t.Helper()
	ctx := context.Background()
	var raw []byte
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(db + suffix)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		raw = append(raw, b...)
	}
	u, _ := url.Parse(co.Identifier)
	values := map[string]string{"Company identifier": co.Identifier, "issuer host": u.Host, "Company domain": co.Organization.Domain}
	for _, acct := range []string{"", "personal"} {
		b, err := env.Secrets.LoadCompany(ctx, co.Identifier, acct)
		if err != nil {
			continue
		}
		if b.UserID != "" {
			values["User ID"] = b.UserID
		}
		for i, d := range b.Delegated {
			values[fmt.Sprintf("delegation %s/%d", acct, i)] = d.Delegation
			parts := strings.Split(d.Delegation, ".")
			values[fmt.Sprintf("delegation signing input %s/%d", acct, i)] = parts[0] + "." + parts[1]
			values[fmt.Sprintf("delegation jti %s/%d", acct, i)] = jwtClaim(t, d.Delegation, "jti")
		}
		for i, tk := range b.Tokens {
			values[fmt.Sprintf("refresh token %d", i)] = tk.RefreshToken
			values[fmt.Sprintf("access token %d", i)] = tk.AccessToken
		}
	}
	dev, err := env.Secrets.LoadDevice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Controls: what the operator did write is found.
	if !bytes.Contains(raw, []byte(dev.DeviceID)) {
		t.Fatalf("control: the device ID %s is not in the operator's database file; the scan does not see it", dev.DeviceID)
	}
	if !strings.Contains(logs, `"route":"sign"`) {
		t.Fatalf("control: no sign request in the operator's logs:\n%s", logs)
	}
	found := 0
	for what, v := range values {
		if v == "" {
			continue
		}
		found++
		if bytes.Contains(raw, []byte(v)) {
			t.Errorf("the operator's database holds the %s", what)
		}
		if strings.Contains(logs, v) {
			t.Errorf("the operator's logs hold the %s", what)
		}
	}
	if strings.Contains(logs, dev.DeviceID) {
		t.Error("the operator's logs name the device")
	}
	t.Logf("canary: %d values checked against %d bytes of database and %d bytes of logs", found, len(raw), len(logs))
}

func waitSignIn(t *testing.T, s *fronts.SignIn, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		v, err := s.Flow(id)
		if err != nil {
			t.Fatal(err)
		}
		switch v.State {
		case fronts.FlowWaiting:
			time.Sleep(10 * time.Millisecond)
			continue
		case fronts.FlowSucceeded:
			return
		}
		t.Fatalf("the sign-in ended %s: %s (%s)", v.State, v.Message, v.Detail)
	}
	t.Fatal("the sign-in did not finish within 30 s")
}

// userBrowser plays the user's browser against the Company process: it opens the consent
// page, approves, and follows the redirect back to Poppydesk's loopback listener.
type browserAsUser struct {
	t  *testing.T
	hc *http.Client
}

func userBrowser(t *testing.T, companyCA *x509.Certificate) *browserAsUser {
	pool := x509.NewCertPool()
	pool.AddCert(companyCA)
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return dialer.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port)) // *.localhost is loopback
		}}
	t.Cleanup(tr.CloseIdleConnections)
	return &browserAsUser{t: t, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browserAsUser) approve(authURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := poppytest.AnswerConsent(ctx, b.hc, authURL, poppytest.Consent{Decision: "approve", Account: "user@shop.example"}); err != nil {
		b.t.Errorf("the user's browser: %v", err)
	}
}

func httpGet(t *testing.T, h *app.Host, u string) string {
	t.Helper()
	resp, err := h.Engine().Transport().NoRedirectClient().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func jwtHeader(t *testing.T, compact string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(compact, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	json.Unmarshal(b, &h)
	return h
}

func jwtClaim(t *testing.T, compact, name string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(compact, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	json.Unmarshal(b, &c)
	s, _ := c[name].(string)
	return s
}

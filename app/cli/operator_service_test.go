//go:build !desktop

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
)

// serviceUnit is the operator's systemd unit in the Debian package.
const serviceUnit = "../../build/linux/operator/poppydesk-operator.service"

// unitKeys reads a unit file's [Service] settings: every value of each key, in order.
func unitKeys(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		default:
			k, v, _ := strings.Cut(line, "=")
			out[section+k] = append(out[section+k], v)
		}
	}
	return out
}

// TestOperatorServiceUnit checks the systemd unit the Debian package installs: systemd-analyze
// verify finds nothing to say about it; it runs the operator as a user of its own with its state
// under /var/lib, hardened; the package installs it without enabling it. Then the unit's
// ExecStart runs as the test's operator, as systemd would start it: with only the environment
// the unit gives (its Environment= lines, an EnvironmentFile naming a PostgreSQL database and
// the public URL, the credentials directory with the key), behind a TLS-terminating proxy. A
// device enrolls and gets a signature, `poppydesk operator devices` lists it and revokes it,
// and the service stops cleanly on SIGTERM.
func TestOperatorServiceUnit(t *testing.T) {
	keys := unitKeys(t, serviceUnit)
	for k, want := range map[string]string{
		"[Service]DynamicUser": "yes", "[Service]User": "poppydesk-operator", "[Service]StateDirectory": "poppydesk-operator",
		"[Service]StateDirectoryMode": "0700", "[Service]UMask": "0077", "[Service]ProtectSystem": "strict",
		"[Service]NoNewPrivileges": "yes", "[Service]ProtectHome": "yes", "[Service]PrivateTmp": "yes", "[Service]CapabilityBoundingSet": "",
		"[Install]WantedBy": "multi-user.target",
	} {
		if got := keys[k]; len(got) != 1 || got[0] != want {
			t.Errorf("the unit's %s = %q, want %q", k, got, want)
		}
	}
	if env := strings.Join(keys["[Service]Environment"], " "); !strings.Contains(env, "sqlite:/var/lib/poppydesk-operator/") {
		t.Errorf("the unit's default database is not under /var/lib/poppydesk-operator: %s", env)
	}
	nfpm, err := os.ReadFile("../../build/linux/nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(nfpm), "dst: /usr/lib/systemd/system/poppydesk-operator.service") {
		t.Error("the Debian package does not install the unit in /usr/lib/systemd/system")
	}
	if strings.Contains(string(nfpm), "scripts:") {
		t.Error("the package has maintainer scripts; it must install the unit disabled, without enabling or starting it")
	}

	// systemd-analyze verify, with ExecStart naming this test's binary (verify checks that the
	// program exists) and nothing else changed.
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("POPPYDESK_REQUIRE_POSTGRES") == "1" {
			t.Fatal("systemd-analyze is missing (Debian: apt-get install systemd; scripts/bootstrap.sh does it)")
		}
		t.Skip("systemd-analyze is missing; install systemd")
	}
	unit, err := os.ReadFile(serviceUnit)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	verifyDir := filepath.Join(dir, "verify")
	os.Mkdir(verifyDir, 0o700)
	local := filepath.Join(verifyDir, "poppydesk-operator.service")
	if err := os.WriteFile(local, []byte(strings.Replace(string(unit), "ExecStart=/usr/bin/poppydesk ", "ExecStart="+os.Args[0]+" ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", "--man=no", local).CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}

	// The ExecStart line as systemd runs it.
	execStart := keys["[Service]ExecStart"]
	if len(execStart) != 1 {
		t.Fatalf("ExecStart = %q", execStart)
	}
	argv := strings.Fields(execStart[0])
	if argv[0] != "/usr/bin/poppydesk" {
		t.Fatalf("ExecStart runs %s, not the packaged /usr/bin/poppydesk", argv[0])
	}
	creds := filepath.Join(dir, "credentials")
	os.Mkdir(creds, 0o700)
	if code, out, errs := runCLI(t, testEnv(dir), "operator", "keygen", "--out", filepath.Join(creds, "operator-key.pem"), "--bits", "2048"); code != 0 {
		t.Fatalf("keygen: %s %s", out, errs)
	}
	for i, a := range argv {
		argv[i] = strings.ReplaceAll(a, "${CREDENTIALS_DIRECTORY}", creds)
	}
	dsn := poppytest.StartPostgres(t)
	front := httptest.NewUnstartedServer(nil)
	front.StartTLS()
	defer front.Close()
	// systemd's environment: the unit's Environment= lines, then its EnvironmentFile (which wins),
	// and the credentials directory. The unit's listen addresses are replaced by free ports.
	env := []string{"CREDENTIALS_DIRECTORY=" + creds, "PATH=/usr/bin:/bin"}
	for _, e := range keys["[Service]Environment"] {
		env = append(env, e)
	}
	envFile := []string{"POPPYDESK_OPERATOR_PUBLIC_URL=" + front.URL, "POPPYDESK_OPERATOR_DB=" + dsn,
		"POPPYDESK_OPERATOR_LISTEN=127.0.0.1:0", "POPPYDESK_OPERATOR_METRICS_LISTEN=127.0.0.1:0", "POPPYDESK_OPERATOR_DRAIN=0s"}
	env = append(env, envFile...)
	svc := startChildEnv(t, env, argv[1:]...)
	var info operatorServeInfo
	if err := json.Unmarshal([]byte(svc.line), &info); err != nil || info.Database != "postgresql" {
		t.Fatalf("the service printed %q (%v); want it on PostgreSQL\n%s", svc.line, err, svc.stderr.String())
	}
	backend, _ := url.Parse("http://" + info.Listen)
	front.Config.Handler = httputil.NewSingleHostReverseProxy(backend)

	// A device enrolls with a token and signs through the service.
	code, tok, errs := runCLI(t, testEnv(dir), "operator", "enroll-token", "--db", dsn)
	if code != 0 {
		t.Fatalf("enroll-token: %s", errs)
	}
	ctx := context.Background()
	b, err := identity.Enroll(ctx, front.Client(), front.URL, strings.TrimSpace(tok), nil)
	if err != nil {
		t.Fatalf("enrolling through the service: %v\n%s", err, svc.stderr.String())
	}
	op, err := identity.NewRemoteOperator(identity.RemoteConfig{Device: b, HTTPClient: front.Client()})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := identity.New(identity.Config{ClientID: b.ClientID, JWKSURI: b.JWKSURI}, op, nil)
	if _, err := a.ClientAssertion(ctx, "https://auth.shop.example"); err != nil {
		t.Fatalf("a blind signature from the service: %v", err)
	}
	resp, err := http.Get("http://" + info.MetricsListen + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics on its own listener: %d", resp.StatusCode)
	}

	// The administrator lists and revokes the device.
	code, out, errs := runCLI(t, testEnv(dir), "operator", "devices", "--db", dsn)
	if code != 0 || !strings.Contains(out, b.DeviceID) || !strings.Contains(out, "active") || !strings.Contains(errs, "1 devices, 1 active") {
		t.Fatalf("operator devices: %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, testEnv(dir), "operator", "devices", "revoke", b.DeviceID, "--db", dsn); code != 0 || !strings.Contains(out, "revoked "+b.DeviceID) {
		t.Fatalf("operator devices revoke: %d %s %s", code, out, errs)
	}
	if _, out, _ := runCLI(t, testEnv(dir), "operator", "devices", "--db", dsn); !strings.Contains(out, "revoked ") {
		t.Fatalf("after revoking, the list says:\n%s", out)
	}
	if _, err := a.ClientAssertion(ctx, "https://auth.shop.example"); err == nil || !strings.Contains(err.Error(), "enroll it again") {
		t.Fatalf("a revoked device signed: %v", err)
	}
	if err := svc.stop(t); err != nil {
		t.Fatalf("the service did not stop cleanly on SIGTERM: %v\n%s", err, svc.stderr.String())
	}
	if logs := svc.stderr.String(); strings.Contains(logs, b.DeviceID) || !strings.Contains(logs, `"msg":"operator stopped"`) {
		t.Fatalf("the service's logs name the device, or do not say it stopped:\n%s", logs)
	}
}

package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
)

// TestInspectorTimeline: a signed-in API call caused by a tool call appears on the Inspector's
// timeline with its cause and Session, and opens to the decoded Session JWT and delegation with
// the User ID hidden and no compact JWT or token anywhere; filters and the HAR export work.
func TestInspectorTimeline(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.SignIn(t, "personal", "orders:read")
	co := f.Discover(t)
	ctx := inspect.WithCause(context.Background(), inspect.Cause{Kind: inspect.CauseModel, Name: "call_api_operation"})
	ac, err := f.Host.Engine().APIClient(ctx, co.Identifier, "personal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.Send(ctx, &apis.Request{Method: http.MethodGet, URL: f.Company.URL(refcompany.ShopHost, "/api/orders")}); err != nil {
		t.Fatal(err)
	}
	in := f.Fronts().Inspector
	page, err := in.List(fronts.InspectorQuery{Search: "/api/orders"})
	if err != nil {
		t.Fatal(err)
	}
	if page.Capped || page.Searched == 0 || page.Searched < page.Total {
		t.Fatalf("a short log searched %d exchanges, capped %v, %d matches", page.Searched, page.Capped, page.Total)
	}
	var row *fronts.InspectorRow
	for i := range page.Rows {
		if page.Rows[i].Cause == "model: call_api_operation" && page.Rows[i].Status == 200 {
			row = &page.Rows[i]
		}
	}
	if row == nil {
		t.Fatalf("no 200 row caused by the tool call: %+v", page.Rows)
	}
	if row.SID == "" || row.Company != co.Identifier {
		t.Errorf("row = %+v", row)
	}
	e, err := in.Entry(row.ID)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]fronts.InspectorToken{}
	for _, tk := range e.Tokens {
		kinds[strings.SplitN(tk.Where, " (", 2)[0]] = tk
	}
	sj, ok := kinds["Session JWT"]
	if !ok || !strings.Contains(sj.Claims, `"htm": "GET"`) || !strings.Contains(sj.Claims, `"sub": "(hidden)"`) {
		t.Errorf("Session JWT = %+v", sj)
	}
	if dl, ok := kinds["delegation"]; !ok || !strings.Contains(dl.Header, "poppy-delegation+jwt") {
		t.Errorf("delegation = %+v (tokens %+v)", dl, e.Tokens)
	}
	blob, _ := json.Marshal(e)
	if strings.Contains(string(blob), "eyJ") {
		t.Errorf("a compact JWT is in the entry: %s", blob)
	}
	// The window's actions name themselves as the cause: the sign-in's start and its wait.
	for _, cause := range []string{"window: SignIn.StartDirect", "oauth/token"} {
		if p, _ := in.List(fronts.InspectorQuery{Search: cause}); p.Total == 0 {
			t.Errorf("no exchange names %q as its cause", cause)
		}
	}
	// Filters: by Session, and errors only.
	if p, _ := in.List(fronts.InspectorQuery{SID: row.SID}); p.Total == 0 || p.Total == page.Total+100 {
		t.Errorf("SID filter: %d", p.Total)
	}
	if p, _ := in.List(fronts.InspectorQuery{ErrorsOnly: true}); p.Total >= page.Total+len(p.Rows)+1000 {
		t.Errorf("errors filter: %d", p.Total)
	}
	har, err := in.ExportHAR([]int64{row.ID})
	if err != nil || !strings.Contains(har, `"version": "1.2"`) || !strings.Contains(har, "/api/orders") {
		t.Errorf("HAR: %v %.200s", err, har)
	}
	curl, err := in.ExportCurl([]int64{row.ID})
	if err != nil || !strings.Contains(curl, "\ncurl ") || strings.Contains(curl, "eyJ") {
		t.Errorf("curl: %v %s", err, curl)
	}
}

// TestDeveloperHostsRule: the host rule of developer mode.
func TestDeveloperHostsRule(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"shop.localhost:8443", "shop.localhost,*.shop.localhost", false},
		{"Shop.Localhost", "shop.localhost,*.shop.localhost", false},
		{"127.0.0.1:9443", "127.0.0.1", false},
		{"localhost", "localhost", false},
		{"shop.example.com", "", true},
		{"https://shop.localhost", "", true},
		{"10.0.0.1:443", "", true},
		{"shop.localhost:99999", "", true},
	}
	for _, tt := range tests {
		got, err := app.DeveloperHosts([]string{tt.in})
		if (err != nil) != tt.wantErr || strings.Join(got, ",") != tt.want {
			t.Errorf("DeveloperHosts(%q) = %q, %v", tt.in, got, err)
		}
	}
}

// TestDeveloperModeSettings: developer mode saved in Settings applies at the next start — the
// Company's hosts and CA, and Poppydesk's client metadata served on loopback with its own CA as
// the client_id — and turning it off removes it at the start after.
func TestDeveloperModeSettings(t *testing.T) {
	srv, err := refcompany.New(refcompany.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	caFile, err := srv.WriteCAFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := apptest.Start(t, apptest.Options{Company: srv, Edit: func(c *app.Config) { c.Developer, c.ClientID = app.Developer{}, "https://agent.example/agent.json" }})
	st := f.Fronts().Settings
	if _, err := st.SetDeveloper([]string{"shop.example.com"}, caFile); err == nil {
		t.Fatal("a public name was accepted")
	}
	v, err := st.SetDeveloper([]string{srv.Domain}, caFile)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Developer.RestartNeeded || v.Developer.Active {
		t.Fatalf("before the restart: %+v", v.Developer)
	}
	// The restart: the Config names no developer mode and no client_id, as `poppydesk` does.
	f.Config.ClientID = ""
	f.Restart(t)
	v, _ = st.View()
	v, _ = f.Fronts().Settings.View()
	d := v.Developer
	if !d.Active || d.RestartNeeded || d.CAFile != caFile || !strings.HasPrefix(d.ClientID, "https://agent.localhost:") || d.AgentCAFile == "" {
		t.Fatalf("after the restart: %+v", d)
	}
	if v.Identity.ClientID != d.ClientID {
		t.Errorf("identity %s, developer client_id %s", v.Identity.ClientID, d.ClientID)
	}
	if _, err := f.Host.Engine().Discover(context.Background(), srv.Domain); err != nil {
		t.Fatalf("discovering the Company under development: %v", err)
	}
	// Poppydesk's client metadata is served with a certificate from its developer-mode CA.
	pem, err := os.ReadFile(d.AgentCAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	port := strings.TrimSuffix(strings.TrimPrefix(d.ClientID, "https://agent.localhost:"), "/agent.json")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: app.DevAgentHost}}}
	resp, err := hc.Get("https://127.0.0.1:" + port + "/agent.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), d.ClientID) {
		t.Errorf("agent.json = %s", body)
	}
	// Off: at the next start nothing of it applies.
	if _, err := f.Fronts().Settings.DisableDeveloper(); err != nil {
		t.Fatal(err)
	}
	f.Config.ClientID = "https://agent.example/agent.json"
	f.Restart(t)
	v, _ = f.Fronts().Settings.View()
	if v.Developer.Active || len(v.Developer.Hosts) != 0 {
		t.Fatalf("after turning it off: %+v", v.Developer)
	}
	// (Discover would answer from its cache; a request shows the transport's policy.)
	if resp, err := f.Host.Engine().Transport().NoRedirectClient().Get(srv.PoppyJSONURL()); err == nil {
		resp.Body.Close()
		t.Fatal("the Company under development is still reachable with developer mode off")
	}
}

// TestDiscoverHintAndFinding: the window's Discover of a Company under development without
// developer mode says how developer mode would help, and a failed discovery check becomes a
// finding naming its section.
func TestDiscoverHintAndFinding(t *testing.T) {
	f := apptest.Start(t, apptest.Options{Faults: []string{refcompany.FaultDomainMismatch}})
	_, err := f.Fronts().Companies.Discover(f.Company.Domain)
	if err == nil {
		t.Fatal("discovery succeeded despite the fault")
	}
	fs, _ := f.Fronts().Inspector.Findings()
	if len(fs) == 0 || fs[0].Rule != inspect.RuleDiscoveryDomain || fs[0].Section != "spec 3, 3.1" || !strings.Contains(fs[0].Fix, "set organization.domain to") {
		t.Errorf("findings = %+v", fs)
	}
	g := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) { c.Developer = app.Developer{} }})
	_, err = g.Fronts().Companies.Discover(g.Company.Domain)
	if err == nil || !strings.Contains(err.Error(), "Settings → Developer mode") {
		t.Errorf("no developer-mode hint: %v", err)
	}
}

// TestInspectorSignInHasACause: the token exchange of a sign-in the user started in the window
// is on the timeline with that cause, although the Company's answer arrives on the loopback
// redirect, outside the window's call.
func TestInspectorSignInHasACause(t *testing.T) {
	f := apptest.Start(t, apptest.Options{})
	f.SignIn(t, "personal", "orders:read")
	page, err := f.Fronts().Inspector.List(fronts.InspectorQuery{Search: "/oauth/token"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range page.Rows {
		if !strings.HasSuffix(r.URL, "/oauth/token") {
			continue
		}
		n++
		if !strings.HasPrefix(r.Cause, "window: ") {
			t.Errorf("%s %s has the cause %q, not the window's sign-in", r.Method, r.URL, r.Cause)
		}
	}
	if n == 0 {
		t.Fatalf("no token exchange on the timeline: %+v", page.Rows)
	}
}

// TestCurlExportRuns: the Inspector's curl export of a request to a Company under development
// works as exported: the real curl, given nothing but the exported command, fetches the
// reference Company's poppy.json, trusting its CA through --cacert with developer mode's CA
// file; and the export says it is not re-signed and which requests replay.
func TestCurlExportRuns(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
			t.Fatal("curl is not installed")
		}
		t.Skip("curl is not installed; set POPPYDESK_REQUIRE_E2E=1 to make this a failure")
	}
	caFile := filepath.Join(t.TempDir(), "rootCA.pem")
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) {
		var pemData []byte
		for _, ca := range c.Developer.RootCAs {
			pemData = append(pemData, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})...)
		}
		if err := os.WriteFile(caFile, pemData, 0o600); err != nil {
			t.Fatal(err)
		}
		c.Developer.CAFile = caFile
	}})
	f.Discover(t)
	page, err := f.Fronts().Inspector.List(fronts.InspectorQuery{Search: "/.well-known/poppy.json"})
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	for _, r := range page.Rows {
		if strings.HasSuffix(r.URL, "/.well-known/poppy.json") && r.Status == 200 {
			id = r.ID
		}
	}
	if id == 0 {
		t.Fatalf("no poppy.json fetch on the timeline: %+v", page.Rows)
	}
	cmd, err := f.Fronts().Inspector.ExportCurl([]int64{id})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--cacert '" + caFile + "'", "not re-signed", "needs no fresh Session JWT"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("the export lacks %q:\n%s", want, cmd)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-c", cmd+" --silent --show-error --fail")
	sh.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} // no proxy, no ~/.curlrc
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the exported command failed: %v\n%s\n%s", err, out, cmd)
	}
	if !strings.Contains(string(out), `"organization"`) || !strings.Contains(string(out), `"protocol_version"`) {
		t.Errorf("the exported command did not fetch poppy.json:\n%s", out)
	}
}

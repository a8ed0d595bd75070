package refcompany_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

func start(t *testing.T, opts refcompany.Options) (*refcompany.Server, *http.Client) {
	t.Helper()
	s := poppytest.Start(t, opts)
	return s, poppytest.Transport(t, s, nil).NoRedirectClient()
}

func getJSON(t *testing.T, c *http.Client, url string, hdr map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, resp.Header, m
}

func TestHostsAndDocuments(t *testing.T) {
	s, c := start(t, refcompany.Options{})
	tests := []struct {
		name, url string
		status    int
		key, want string
	}{
		{"poppy.json", s.PoppyJSONURL(), 200, "protocol_version", "0.4"},
		{"version document", s.URL(refcompany.ShopHost, "/poppy/0.3.json"), 200, "protocol_version", "0.3"},
		{"protected resource metadata", s.URL(refcompany.ShopHost, "/.well-known/oauth-protected-resource"), 200, "resource", s.Origin()},
		{"AS metadata", s.URL(refcompany.AuthHost, "/.well-known/oauth-authorization-server"), 200, "issuer", s.Issuer()},
		{"www redirect", s.URL(refcompany.WWWHost, "/.well-known/poppy.json"), 301, "", ""},
		{"API without Session header", s.URL(refcompany.ShopHost, "/api/products"), 400, "error", "invalid_session"},
		{"unknown host name on the listener", s.URL(refcompany.OtherHost, "/nothing"), 404, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _, m := getJSON(t, c, tc.url, nil)
			if st != tc.status || tc.key != "" && m[tc.key] != tc.want {
				t.Fatalf("%d %v", st, m)
			}
		})
	}
	_, h, m := getJSON(t, c, s.PoppyJSONURL(), nil)
	if h.Get("ETag") == "" || h.Get("Cache-Control") != "max-age=300" {
		t.Fatalf("headers %v", h)
	}
	for _, k := range []string{"organization", "auth", "agent", "apis", "web", "feedback", "excluded_tasks", "extensions", "supported_versions"} {
		if m[k] == nil {
			t.Errorf("poppy.json lacks %s", k)
		}
	}
	if st, _, _ := getJSON(t, c, s.PoppyJSONURL(), map[string]string{"If-None-Match": h.Get("ETag")}); st != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", st)
	}
}

func TestFaultSwitching(t *testing.T) {
	s, c := start(t, refcompany.Options{Faults: []string{refcompany.FaultDomainMismatch}})
	_, _, m := getJSON(t, c, s.PoppyJSONURL(), nil)
	if m["organization"].(map[string]any)["domain"] == s.Domain {
		t.Fatal("domain-mismatch fault not applied at start")
	}
	s.SetFault(refcompany.FaultDomainMismatch, false)
	s.SetFault(refcompany.FaultRedirectOtherPath, true)
	if got := strings.Join(s.ActiveFaults(), ","); got != refcompany.FaultRedirectOtherPath {
		t.Fatalf("ActiveFaults = %s", got)
	}
	st, h, _ := getJSON(t, c, s.PoppyJSONURL(), nil)
	if st != http.StatusFound || !strings.HasSuffix(h.Get("Location"), "/uploads/poppy.json") {
		t.Fatalf("redirect-other-path: %d %v", st, h)
	}
	if err := s.SetFault("no-such-fault", true); err == nil || !strings.Contains(err.Error(), "known faults") {
		t.Fatalf("unknown fault: %v", err)
	}
	if _, err := refcompany.New(refcompany.Options{Faults: []string{"nope"}}); err == nil {
		t.Fatal("New accepted an unknown fault")
	}
}

func TestRecordsAndAddHost(t *testing.T) {
	s, c := start(t, refcompany.Options{})
	s.AddHost(refcompany.AgentHost, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok":true}`)) }))
	st, _, m := getJSON(t, c, s.URL(refcompany.AgentHost, "/agent.json"), map[string]string{"X-Test": "1"})
	if st != 200 || m["ok"] != true {
		t.Fatalf("%d %v", st, m)
	}
	rs := s.RequestsTo(refcompany.AgentHost, "/agent.json")
	if len(rs) != 1 || rs[0].Header.Get("X-Test") != "1" || rs[0].Method != http.MethodGet {
		t.Fatalf("records = %+v", rs)
	}
	s.ResetRequests()
	if len(s.Requests()) != 0 {
		t.Fatal("ResetRequests kept records")
	}
}

func TestListenAndCA(t *testing.T) {
	s, err := refcompany.New(refcompany.Options{Listen: "0.0.0.0:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "loopback") {
		s.Close()
		t.Fatalf("listened on a non-loopback address: %v", err)
	}
	s2, _ := start(t, refcompany.Options{})
	p, err := s2.WriteCAFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, _ := os.ReadFile(p)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) || !s2.CA().Cert.IsCA {
		t.Fatal("CA file is not a CA certificate")
	}
}

package discovery_test

import (
	"context"
	"errors"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// TestCollectAll: a collecting run reports every failed check it can reach, not only the first,
// and still returns the first as its error; without faults it records passes only.
func TestCollectAll(t *testing.T) {
	tests := []struct {
		name   string
		faults []string
		want   []string
	}{
		{"none", nil, nil},
		{"final URL and issuer", []string{refcompany.FaultRedirectOtherPath, refcompany.FaultIssuerMismatch},
			[]string{discovery.CheckFinalURL, discovery.CheckIssuerMatch}},
		{"final URL, domain listed nowhere", []string{refcompany.FaultRedirectOtherPath, refcompany.FaultIssuerNotListingDomain},
			[]string{discovery.CheckFinalURL, discovery.CheckProtectedResources}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.faults...)
			var r discovery.Report
			_, err := e.d.Discover(context.Background(), e.s.Domain, discovery.CollectAll(&r), discovery.NoCache())
			var got []string
			for _, ce := range r.Failures() {
				got = append(got, ce.Check)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("failed checks = %q, want %q (results %+v)", got, tt.want, r.Results)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("failed checks = %q, want %q", got, tt.want)
				}
			}
			if (err != nil) != (len(tt.want) > 0) {
				t.Fatalf("err = %v", err)
			}
			if len(r.Results) < 3 {
				t.Errorf("only %d checks recorded", len(r.Results))
			}
			// Control: the same Company without CollectAll stops at the first failure.
			if len(tt.want) > 1 {
				_, err := e.d.Discover(context.Background(), e.s.Domain, discovery.NoCache())
				if ce, ok := discovery.AsCheckError(err); !ok || ce.Check != tt.want[0] {
					t.Errorf("a normal run ended with %v", err)
				}
			}
		})
	}
}

func TestDeveloperHint(t *testing.T) {
	ctx := context.Background()
	// The reference Company without developer mode: its name is a loopback name and its CA is
	// unknown; with the dev hosts but not the CA, the certificate is unknown.
	e := newEnv(t)
	tests := []struct {
		name string
		dev  bool
		want string
	}{
		{"no developer mode", false, "--dev-company"},
		{"dev hosts without the CA", true, "--dev-ca"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := transport.Config{}
			if tt.dev {
				cfg.DevHosts = e.s.ClientConfig().DevHosts
			}
			tr, err := transport.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			d, _ := discovery.New(discovery.Config{Transport: tr})
			_, err = d.Discover(ctx, e.s.Domain)
			if err == nil {
				t.Fatal("discovery succeeded")
			}
			if h := discovery.DeveloperHint(err, e.s.Domain); !strings.Contains(h, tt.want) {
				t.Errorf("hint = %q for %v", h, err)
			}
		})
	}
	if h := discovery.DeveloperHint(errors.New("HTTP 500"), "example.com"); h != "" {
		t.Errorf("control: a plain error got the hint %q", h)
	}
}

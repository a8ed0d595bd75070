package transport_test

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// TestAddressPolicy: loopback, private, link-local, unspecified and multicast addresses are refused
// at connection time, whatever DNS says, except the configured dev host names (spec 3).
func TestAddressPolicy(t *testing.T) {
	f := newFixture(t, func(c *transport.Config) {
		// A hostile resolver: every name resolves to the reference Company's loopback listener.
		c.LookupNetIP = func(ctx context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "rebind.example":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "private.example":
				return []netip.Addr{netip.MustParseAddr("10.0.0.7"), netip.MustParseAddr("fd00::1")}, nil
			case "metadata.example":
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			}
			return nil, errors.New("no such host in this test")
		}
	})
	port := strconv.Itoa(f.s.Port)
	tests := []struct {
		name, url string
		why       string // "" = allowed
	}{
		{"dev host maps to loopback", "https://shop.localhost:" + port + "/", ""},
		{"DNS answer pointing at loopback (rebinding)", "https://rebind.example:" + port + "/", "loopback"},
		{"RFC 1918 and ULA answers", "https://private.example/", "private"},
		{"link-local metadata address", "https://metadata.example/", "link-local"},
		{"loopback literal", "https://127.0.0.1:" + port + "/", "loopback"},
		{"IPv6 loopback literal", "https://[::1]:" + port + "/", "loopback"},
		{"IPv4-mapped loopback", "https://[::ffff:127.0.0.1]:" + port + "/", "loopback"},
		{"unspecified", "https://0.0.0.0:" + port + "/", "unspecified"},
		{"multicast", "https://239.1.2.3/", "multicast"},
		{"localhost name not configured", "https://evil.localhost:" + port + "/", "resolve"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.s.Requests())
			resp, err := f.tr.NoRedirectClient().Get(tc.url)
			if tc.why == "" {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatalf("connected to %s", tc.url)
			}
			if tc.why == "resolve" {
				if !strings.Contains(err.Error(), "cannot resolve") {
					t.Fatalf("err = %v", err)
				}
			} else {
				var ae *transport.AddressError
				if !errors.As(err, &ae) || ae.Why != tc.why || !errors.Is(err, transport.ErrAddressRefused) {
					t.Fatalf("err = %v, want AddressError %s", err, tc.why)
				}
			}
			if len(f.s.Requests()) != before {
				t.Fatal("a request reached the listener")
			}
		})
	}
}

// TestSchemeAndDevCA: only HTTPS; the dev CA is trusted only for dev host names; "configured on
// purpose" (AllowNonPublicAddresses) lets loopback through but not the dev CA.
func TestSchemeAndDevCA(t *testing.T) {
	f := newFixture(t, nil)
	if _, err := f.tr.NoRedirectClient().Get("http://shop.localhost:" + strconv.Itoa(f.s.Port) + "/"); !errors.Is(err, transport.ErrNotHTTPS) {
		t.Fatalf("http:// err = %v", err)
	}
	open, err := transport.New(transport.Config{AllowNonPublicAddresses: true})
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	_, err = open.NoRedirectClient().Get("https://127.0.0.1:" + strconv.Itoa(f.s.Port) + "/")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("the dev CA was trusted outside dev mode: %v", err)
	}
	trusted, _ := transport.New(transport.Config{AllowNonPublicAddresses: true, RootCAs: f.s.CA().Pool()})
	defer trusted.Close()
	resp, err := trusted.NoRedirectClient().Get("https://127.0.0.1:" + strconv.Itoa(f.s.Port) + "/")
	if err != nil {
		t.Fatalf("configured on purpose: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status = %d", resp.StatusCode)
	}
	if _, err := transport.New(transport.Config{DevHosts: []string{"*"}}); err == nil {
		t.Fatal("a bare * dev host pattern was accepted")
	}
}

// TestWildcardDevHosts: "*.localhost" (the CLI's --dev-allow-loopback) maps every subdomain.
func TestWildcardDevHosts(t *testing.T) {
	s := poppytest.Start(t, refcompany.Options{})
	tr, err := transport.New(transport.Config{DevHosts: []string{"*.localhost"}, DevRootCAs: []*x509.Certificate{s.CA().Cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, h := range []string{"shop.localhost", "auth.shop.localhost"} {
		resp, err := tr.NoRedirectClient().Get(s.URL(h, "/.well-known/oauth-protected-resource"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if !tr.IsDevHost("a.b.localhost") || tr.IsDevHost("localhost") || tr.IsDevHost("localhost.example") {
		t.Fatal("wildcard matching is wrong")
	}
}

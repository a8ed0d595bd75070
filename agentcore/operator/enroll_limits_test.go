package operator

import (
	"net/http"
	"net/netip"
	"testing"
)

// TestSourceOf: the address and network an enrollment counts against, for IPv4, IPv4 mapped
// into IPv6, and IPv6 (a host's /64, its network's /56).
func TestSourceOf(t *testing.T) {
	for _, tc := range []struct{ in, addr, network string }{
		{"203.0.113.77", "203.0.113.77/32", "203.0.113.0/24"},
		{"::ffff:203.0.113.77", "203.0.113.77/32", "203.0.113.0/24"},
		{"2001:db8:1234:5678:9abc::1", "2001:db8:1234:5678::/64", "2001:db8:1234:5600::/56"},
		{"::1", "::/64", "::/56"},
	} {
		s := sourceOf(netip.MustParseAddr(tc.in))
		if s.addr.String() != tc.addr || s.network.String() != tc.network {
			t.Errorf("sourceOf(%s) = %s, %s; want %s, %s", tc.in, s.addr, s.network, tc.addr, tc.network)
		}
	}
}

// TestClientAddr: X-Forwarded-For counts only from a trusted proxy, right-most untrusted hop
// first; a malformed one from a trusted proxy is an error, not a guess.
func TestClientAddr(t *testing.T) {
	s := &Server{cfg: Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}
	for _, tc := range []struct {
		peer, xff, want string
	}{
		{"198.51.100.4:5000", "", "198.51.100.4"},
		{"198.51.100.4:5000", "203.0.113.9", "198.51.100.4"},
		{"10.1.2.3:5000", "203.0.113.9", "203.0.113.9"},
		{"10.1.2.3:5000", "192.0.2.1, 203.0.113.9, 10.9.9.9", "203.0.113.9"},
		{"10.1.2.3:5000", "", "10.1.2.3"},
		{"[2001:db8::1]:5000", "", "2001:db8::1"},
		{"10.1.2.3:5000", "not-an-address", "error"},
	} {
		r := &http.Request{RemoteAddr: tc.peer, Header: http.Header{}}
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		got, err := s.clientAddr(r)
		if tc.want == "error" {
			if err == nil {
				t.Errorf("%s / %q: %s, want an error", tc.peer, tc.xff, got)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%s / %q = %s, %v; want %s", tc.peer, tc.xff, got, err, tc.want)
		}
	}
}

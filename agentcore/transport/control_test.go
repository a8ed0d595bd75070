package transport

import (
	"context"
	"errors"
	"testing"
)

// TestControlAtConnect: the socket-level check refuses non-public addresses on its own, so an
// address that changed between resolution and connect (DNS rebinding) is still refused, and the
// dev exception admits 127.0.0.1 only.
func TestControlAtConnect(t *testing.T) {
	tr, err := New(Config{DevHosts: []string{"shop.localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	dev := context.WithValue(context.Background(), allowLoopbackKey{}, true)
	tests := []struct {
		name string
		ctx  context.Context
		addr string
		ok   bool
	}{
		{"public", context.Background(), "93.184.215.14:443", true},
		{"loopback", context.Background(), "127.0.0.1:443", false},
		{"loopback for a dev host", dev, "127.0.0.1:443", true},
		{"other loopback for a dev host", dev, "127.0.0.2:443", false},
		{"private for a dev host", dev, "192.168.1.1:443", false},
		{"CGNAT", context.Background(), "100.64.0.1:443", false},
		{"link-local v6", context.Background(), "[fe80::1]:443", false},
		{"ULA", context.Background(), "[fd12::1]:443", false},
	}
	for _, tc := range tests {
		err := tr.policy.control(tc.ctx, "tcp", tc.addr, nil)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrAddressRefused) {
			t.Errorf("%s: control(%s) = %v", tc.name, tc.addr, err)
		}
	}
}

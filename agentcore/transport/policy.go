package transport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ErrAddressRefused is matched (errors.Is) by every *AddressError.
var ErrAddressRefused = errors.New("transport: address refused")

// AddressError reports a connection the address policy refused (spec 3 "Redirects and addresses").
type AddressError struct {
	Host string     // the host name from the URL
	IP   netip.Addr // the resolved address that was refused (invalid when resolution found none)
	Why  string     // "loopback", "private", "link-local", ...
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("refused to connect to %s (%s, a %s address): spec 3 forbids connecting to loopback, private or link-local addresses for a URL a Company gave, unless configured on purpose (dev mode maps only configured *.localhost names to 127.0.0.1)", e.Host, e.IP, e.Why)
}

// Is makes errors.Is(err, ErrAddressRefused) true.
func (e *AddressError) Is(target error) bool { return target == ErrAddressRefused }

// classify names why ip is not a public unicast address, or returns "" when it is allowed.
func classify(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate(): // RFC 1918 and fc00::/7 (ULA)
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case cgnat.Contains(ip):
		return "shared (carrier-grade NAT)"
	case ip.Is4() && ip.As4()[0] == 0:
		return "\"this network\""
	case ip == broadcast:
		return "broadcast"
	}
	return ""
}

var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10")
	broadcast = netip.MustParseAddr("255.255.255.255")
	loopback4 = netip.MustParseAddr("127.0.0.1")
)

// hostPolicy decides where a connection for a host may go.
type hostPolicy struct {
	devExact    map[string]bool // exact dev host names (lowercase)
	devSuffixes []string        // from "*.suffix" patterns: ".suffix"
	allowAll    bool            // AllowNonPublicAddresses: configured on purpose
	lookup      func(ctx context.Context, host string) ([]netip.Addr, error)
	dialer      *net.Dialer
}

// isDevHost reports whether host (no port) is a configured dev host name that maps to 127.0.0.1.
func (p *hostPolicy) isDevHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if p.devExact[h] {
		return true
	}
	for _, s := range p.devSuffixes {
		if strings.HasSuffix(h, s) && len(h) > len(s) {
			return true
		}
	}
	return false
}

type allowLoopbackKey struct{}

// control runs on the socket right before connect, with the address actually dialled, so no DNS
// answer (rebinding included) can get around the policy.
func (p *hostPolicy) control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("transport: unexpected dial address %q: %w", address, err)
	}
	ip := ap.Addr().Unmap()
	if p.allowAll {
		return nil
	}
	if ctx.Value(allowLoopbackKey{}) != nil && ip == loopback4 {
		return nil
	}
	if why := classify(ip); why != "" {
		host, _ := ctx.Value(hostKey{}).(string)
		return &AddressError{Host: host, IP: ip, Why: why}
	}
	return nil
}

type hostKey struct{}

// dial connects to addr ("host:port") under the policy: dev host names go to 127.0.0.1, other
// names are resolved here and every resolved address is checked before and at connect time.
func (p *hostPolicy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, hostKey{}, host)
	if p.isDevHost(host) {
		ctx = context.WithValue(ctx, allowLoopbackKey{}, true)
		return p.dialer.DialContext(ctx, "tcp4", net.JoinHostPort(loopback4.String(), port))
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = p.lookup(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("transport: cannot resolve %s: %w", host, err)
		}
	}
	var firstErr error
	for _, ip := range addrs {
		ip = ip.Unmap()
		if !p.allowAll {
			if why := classify(ip); why != "" {
				if firstErr == nil {
					firstErr = &AddressError{Host: host, IP: ip, Why: why}
				}
				continue
			}
		}
		c, err := p.dialer.DialContext(ctx, "tcp", net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("transport: %s has no addresses", host)
	}
	return nil, firstErr
}

// dialTLS connects under the policy and runs the TLS handshake. The dev CA pool is used only for
// dev host names; every other host is verified against the system roots (or Config.RootCAs).
func (p *hostPolicy) dialTLS(ctx context.Context, network, addr string, roots, devRoots *x509.CertPool) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	raw, err := p.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if p.isDevHost(host) && devRoots != nil {
		cfg.RootCAs = devRoots
	}
	tc := tls.Client(raw, cfg)
	hctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("transport: TLS handshake with %s failed: %w", host, err)
	}
	return tc, nil
}

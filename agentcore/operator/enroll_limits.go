package operator

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Open enrollment is limited so that a flood from one place leaves it open for everyone else:
// each source address (an IPv4 address, or the /64 an IPv6 host holds) and each network (an
// IPv4 /24, an IPv6 /56) may enroll a few devices an hour, all sources together at most
// OpenEnrollPerHour, and every enrollment costs a proof of work (identity.SolveEnrollPoW). A
// request refused by a limit counts against none.
//
// The source is the connection's peer address, unless that peer is a trusted proxy
// (Config.TrustedProxies, e.g. the load balancer's addresses): then it is the right-most
// address in X-Forwarded-For that is not a trusted proxy, which is the address the proxy
// itself saw. Without trusted proxies X-Forwarded-For is ignored, so a client cannot choose
// its own address.

// Default open-enrollment limits.
const (
	DefaultEnrollPerAddress = 5
	DefaultEnrollPerNetwork = 20
	DefaultEnrollPoWBits    = 20
)

// source is where an enrollment comes from: its address and network, as prefixes.
type source struct {
	addr, network netip.Prefix
}

func sourceOf(a netip.Addr) source {
	a = a.Unmap()
	if a.Is4() {
		return source{netip.PrefixFrom(a, 32), netip.PrefixFrom(a, 24).Masked()}
	}
	return source{netip.PrefixFrom(a, 64).Masked(), netip.PrefixFrom(a, 56).Masked()}
}

// clientAddr is the address of the client that sent r (see above).
func (s *Server) clientAddr(r *http.Request) (netip.Addr, error) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("the connection's address %q is not an IP address and port", r.RemoteAddr)
	}
	peer := ap.Addr().Unmap()
	if !s.trusted(peer) {
		return peer, nil
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return netip.Addr{}, fmt.Errorf("the trusted proxy %s sent an X-Forwarded-For that does not parse (%q)", peer, hops[i])
		}
		if a = a.Unmap(); !s.trusted(a) {
			return a, nil
		}
	}
	return peer, nil
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// limitSubject names a source's counter in the quota table by a hash, so the table lists no
// address in clear (an IPv4 address can still be found by trying them all; the counters live
// an hour or two).
func limitSubject(kind string, p netip.Prefix) string {
	h := sha256.Sum256([]byte("poppydesk-operator-enroll-limit\x00" + kind + "\x00" + p.String()))
	return "enroll-" + kind + ":" + base64.RawURLEncoding.EncodeToString(h[:12])
}

// enrollCounts are the counts one open enrollment from src uses.
func (s *Server) enrollCounts(src source) []Count {
	return []Count{
		{limitSubject("address", src.addr), Limit{"hour", s.cfg.EnrollPerAddress}},
		{limitSubject("network", src.network), Limit{"hour", s.cfg.EnrollPerNetwork}},
		{"enroll", Limit{"hour", s.cfg.OpenEnrollPerHour}},
	}
}

// enrollLimitWords says which limit a refused enrollment met, for the person at the device.
func (s *Server) enrollLimitWords(oq *OverQuota, src source) string {
	addr := src.addr.Addr().String()
	if src.addr.Bits() != 32 {
		addr = src.addr.String()
	}
	switch {
	case strings.HasPrefix(oq.Subject, "enroll-address:"):
		return fmt.Sprintf("this operator enrolls at most %d devices an hour from one address, and yours (%s) has had them", oq.Limit, addr)
	case strings.HasPrefix(oq.Subject, "enroll-network:"):
		return fmt.Sprintf("this operator enrolls at most %d devices an hour from one network, and yours (%s) has had them", oq.Limit, src.network)
	}
	return fmt.Sprintf("this operator has enrolled as many devices as it does in an hour, %d", oq.Limit)
}

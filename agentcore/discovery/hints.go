package discovery

import (
	"crypto/x509"
	"errors"
	"net"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// DeveloperHint says, for a failed discovery, when developer mode would help: a host that
// resolves to loopback (or is a loopback name), or a certificate from an authority the system
// does not know. "" when developer mode is not the answer. The words name the command line's
// flags; the window shows the same advice for its Settings screen.
func DeveloperHint(err error, domain string) string {
	if err == nil {
		return ""
	}
	host := domain
	if h, _, e := net.SplitHostPort(domain); e == nil {
		host = h
	}
	var ae *transport.AddressError
	if errors.As(err, &ae) && ae.Why == "loopback" {
		return "this host resolves to loopback, which production rules never reach (spec 3): if it is your Company under development, add it with --dev-company " + domain +
			" (in the window: Settings → Developer mode)"
	}
	var ua x509.UnknownAuthorityError
	if errors.As(err, &ua) || strings.Contains(err.Error(), "certificate signed by unknown authority") {
		return "unknown certificate authority: if this is your Company under development with a local CA (such as mkcert's), give its certificate with --dev-ca FILE and the Company with --dev-company " + domain +
			"; the CA is then trusted for that Company's hosts only"
	}
	var de *net.DNSError
	if errors.As(err, &de) && IsLoopbackName(host) {
		return "this is a loopback name: if it is your Company under development, add it with --dev-company " + domain
	}
	return ""
}

// IsLoopbackName reports whether host (no port) is one developer mode may map to loopback:
// localhost, a name under .localhost (RFC 6761 §6.3), or 127.0.0.1.
func IsLoopbackName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost") || host == "127.0.0.1"
}

package discovery

import (
	"errors"
	"fmt"
)

// Names of discovery checks (CheckError.Check).
const (
	CheckDomain              = "domain"                               // the domain given to Discover
	CheckFetch               = "poppy.json fetch"                     // spec 3
	CheckFinalURL            = "poppy.json final URL"                 // spec 3 "Fetching the document"
	CheckParse               = "poppy.json fields"                    // spec 3.1
	CheckHTTPS               = "HTTPS URLs"                           // spec 3 "HTTPS"
	CheckOrganizationDomain  = "organization.domain"                  // spec 3, 3.1
	CheckVersion             = "protocol version"                     // spec 3.4
	CheckVersionDocument     = "supported_versions document"          // spec 3.4
	CheckResourceMetadata    = "protected resource metadata"          // spec 3.2
	CheckIssuerSelection     = "issuer selection"                     // spec 3.1, 3.2
	CheckKnownIssuer         = "known issuer"                         // spec 3.2
	CheckASMetadata          = "authorization server metadata"        // spec 3.2
	CheckIssuerMatch         = "issuer match"                         // spec 3.2
	CheckProtectedResources  = "protected_resources lists the domain" // spec 3.2
	CheckSignInConfiguration = "sign-in configuration"                // spec 3.2
)

// CheckError is a failed discovery check: which check, the spec section, and what the Company
// developer should fix. Err is the underlying error (network, address policy), if any.
type CheckError struct {
	Domain  string
	Check   string
	Section string
	URL     string
	Detail  string
	Err     error
}

func (e *CheckError) Error() string {
	s := fmt.Sprintf("discovery check %q failed (spec %s)", e.Check, e.Section)
	if e.Domain != "" {
		s = fmt.Sprintf("discovery of %s: check %q failed (spec %s)", e.Domain, e.Check, e.Section)
	}
	if e.URL != "" {
		s += " at " + e.URL
	}
	s += ": " + e.Detail
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *CheckError) Unwrap() error { return e.Err }

// AsCheckError returns err's *CheckError, if any.
func AsCheckError(err error) (*CheckError, bool) {
	var ce *CheckError
	ok := errors.As(err, &ce)
	return ce, ok
}

package transport

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// Destinations is the set of a Company's Session destinations (spec 5.2): the only URLs that may
// receive its Session JWT (and access tokens). Entries are exact URLs or path prefixes on an
// origin; prefixes match on path-segment boundaries, so a prefix https://a.example/api matches
// /api and /api/x but not /apix. Exclusions (e.g. an API description document under an API
// prefix) win over entries. Sharing a host name with an entry does not make a URL a destination.
// The zero value allows nothing. Destinations is immutable after building; safe for concurrent use.
type Destinations struct {
	entries  []destEntry
	excluded map[string]bool // origin+path
}

type destEntry struct {
	origin string // "https://host[:port]" lowercased host
	path   string // "/" normalised, no trailing slash except root
	prefix bool
}

// DestinationsBuilder builds a Destinations.
type DestinationsBuilder struct{ d Destinations }

// Exact adds a URL that is a Session destination by itself (query ignored).
func (b *DestinationsBuilder) Exact(raw string) error { return b.add(raw, false) }

// Prefix adds a URL whose path and every path below it are Session destinations.
func (b *DestinationsBuilder) Prefix(raw string) error { return b.add(raw, true) }

// Exclude removes one exact URL (e.g. a description document) from the destinations.
func (b *DestinationsBuilder) Exclude(raw string) error {
	u, err := CheckURL(raw)
	if err != nil {
		return err
	}
	if b.d.excluded == nil {
		b.d.excluded = map[string]bool{}
	}
	b.d.excluded[originOf(u)+cleanPath(u.EscapedPath())] = true
	return nil
}

// Build returns the Destinations.
func (b *DestinationsBuilder) Build() *Destinations {
	d := b.d
	return &d
}

func (b *DestinationsBuilder) add(raw string, prefix bool) error {
	u, err := CheckURL(raw)
	if err != nil {
		return fmt.Errorf("Session destination: %w", err)
	}
	b.d.entries = append(b.d.entries, destEntry{origin: originOf(u), path: cleanPath(u.EscapedPath()), prefix: prefix})
	return nil
}

// Allows reports whether u is a Session destination.
func (d *Destinations) Allows(u *url.URL) bool {
	if d == nil || u == nil || u.Scheme != "https" || u.User != nil || u.Opaque != "" {
		return false
	}
	if CheckPath(u) != nil {
		// A dot-segment or encoded slash could make the server see another resource than the
		// text compared here (e.g. /api/../oauth/token); such a URL is never a destination.
		return false
	}
	o, p := originOf(u), cleanPath(u.EscapedPath())
	if d.excluded[o+p] {
		return false
	}
	for _, e := range d.entries {
		if e.origin != o {
			continue
		}
		if p == e.path {
			return true
		}
		if e.prefix && (e.path == "/" || strings.HasPrefix(p, e.path+"/")) {
			return true
		}
	}
	return false
}

// originOf is scheme://host[:port] with the host lowercased and the default port dropped.
func originOf(u *url.URL) string {
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && p != "443" {
		host += ":" + p
	}
	return "https://" + host
}

func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// ErrAmbiguousPath is matched (errors.Is) by every *PathError.
var ErrAmbiguousPath = errors.New("transport: URL path with dot-segments or encoded slashes")

// PathError reports a Company-given URL whose path a server could resolve to another resource
// than its text names: a "." or ".." segment (also percent-encoded, such as %2e%2E), or a
// segment holding an encoded slash or backslash (%2F, %5C) or a backslash. Such URLs are refused,
// never normalised silently, because the Session destinations check (spec 5.2) compares paths as
// text and servers normalise them (RFC 3986 §5.2.4), so /api/../oauth/token would otherwise get
// the Session JWT meant for /api.
type PathError struct {
	URL     string // redacted
	Segment string // the offending segment, as written
}

func (e *PathError) Error() string {
	return fmt.Sprintf("refused %s: its path segment %q is a dot-segment or holds an encoded slash or backslash, so the server could resolve it to another resource (RFC 3986 §5.2.4); spec 3 and 5.2 require requests to go only to the URLs the Company lists, so the Company must publish (or the caller must use) a path without \".\", \"..\", %%2F or %%5C segments", e.URL, e.Segment)
}

// Is makes errors.Is(err, ErrAmbiguousPath) true.
func (e *PathError) Is(target error) bool { return target == ErrAmbiguousPath }

// CheckPath returns a *PathError when u's path has a segment that is "." or ".." after
// percent-decoding, or that holds "/" or a backslash after percent-decoding (an encoded slash, or a
// backslash written or encoded), or a malformed percent-escape. Nil otherwise.
func CheckPath(u *url.URL) error {
	p := u.EscapedPath()
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" {
			continue
		}
		dec, err := url.PathUnescape(seg)
		if err != nil || dec == "." || dec == ".." || strings.ContainsAny(dec, "/\\") {
			return &PathError{URL: redact.URL(u), Segment: seg}
		}
	}
	return nil
}

// ErrNotSessionDestination is matched (errors.Is) by every *DestinationError.
var ErrNotSessionDestination = errors.New("transport: not a Session destination")

// DestinationError reports a refusal to sign a request (or send an access token) to a URL that
// is not one of the Company's Session destinations (spec 5.2). Nothing was sent.
type DestinationError struct{ URL string }

func (e *DestinationError) Error() string {
	return fmt.Sprintf("refused to send the Session JWT to %s: it is not one of the Company's Session destinations (its listed APIs and protocol or extension endpoints, spec 5.2); discovery documents, OAuth endpoints and web pages never get it", e.URL)
}

// Is makes errors.Is(err, ErrNotSessionDestination) true.
func (e *DestinationError) Is(target error) bool { return target == ErrNotSessionDestination }

package transport

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/redact"
)

// Destinations is the set of a Company's Session destinations (spec 5.2): the only URLs that may
// receive its Session JWT (and access tokens). Entries are exact URLs, URL templates or path
// prefixes on an origin:
//
//   - Exact: one URL (query ignored), such as an MCP server's url or {browser_session_endpoint}/authorize.
//   - Template: a URL whose path holds template expressions, such as an OpenAPI server joined
//     with its path /orders/{id}: each expression stands for one non-empty part of one path
//     segment (it never spans a "/"), and every other character must be as written.
//   - Prefix: a URL and every path below it, on path-segment boundaries (a prefix
//     https://a.example/api matches /api and /api/x but not /apix). A prefix whose path is the
//     origin's root names the root only: an entry never makes a whole origin a destination.
//
// Exclusions (description documents, OAuth endpoints, web pages) win over entries, and a path
// under /.well-known/ (RFC 8615: discovery and metadata documents) is never a destination.
// Sharing a host name with an entry does not make a URL a destination. The zero value allows
// nothing. Destinations is immutable after building; safe for concurrent use.
//
// Allows is a lookup, not a scan (a Company listing a Graph-sized API has thousands of
// entries): Build indexes the entries by origin, the exact and prefix paths in maps (a prefix is
// found by looking up each of the path's ancestors), and the templates in a tree of path segments
// whose literal segments are map keys, so a check costs the path's length, not the entries' count.
type Destinations struct {
	entries  []destEntry
	excluded map[placeKey]bool
	origins  map[originKey]*originIndex
}

// originIndex is the entries of one origin, indexed (Build).
type originIndex struct {
	exact    map[string]bool // paths that are destinations themselves (every non-template entry)
	prefixes map[string]bool // paths whose every descendant is a destination
	tmpl     *tmplNode       // templates by segment; nil without any
}

// tmplNode is one level of the template tree: the templates whose next segment is literal text
// (by that text, decoded), those whose next segment holds an expression, and whether a template
// ends here.
type tmplNode struct {
	lit   map[string]*tmplNode
	globs []tmplGlob
	end   bool
}

type tmplGlob struct {
	pat  []globTok
	next *tmplNode
}

// add inserts a template's segments below n.
func (n *tmplNode) add(tmpl [][]globTok) {
	for _, pat := range tmpl {
		n = n.child(pat)
	}
	n.end = true
}

func (n *tmplNode) child(pat []globTok) *tmplNode {
	if lit, ok := literal(pat); ok {
		if n.lit == nil {
			n.lit = map[string]*tmplNode{}
		}
		c := n.lit[lit]
		if c == nil {
			c = &tmplNode{}
			n.lit[lit] = c
		}
		return c
	}
	for _, g := range n.globs {
		if slices.Equal(g.pat, pat) {
			return g.next
		}
	}
	c := &tmplNode{}
	n.globs = append(n.globs, tmplGlob{pat: pat, next: c})
	return c
}

// literal is the text of a segment pattern without expressions.
func literal(pat []globTok) (string, bool) {
	b := make([]byte, len(pat))
	for i, t := range pat {
		if t.kind != 'l' {
			return "", false
		}
		b[i] = t.c
	}
	return string(b), true
}

// match reports whether the decoded path rest (without its leading "/") matches a template below
// n: one segment per level, the literal child first, then each expression child.
func (n *tmplNode) match(rest string) bool {
	seg, more, last := rest, "", true
	if k := strings.IndexByte(rest, '/'); k >= 0 {
		seg, more, last = rest[:k], rest[k+1:], false
	}
	if c := n.lit[seg]; c != nil && (last && c.end || !last && c.match(more)) {
		return true
	}
	for _, g := range n.globs {
		if globMatch(g.pat, seg) && (last && g.next.end || !last && g.next.match(more)) {
			return true
		}
	}
	return false
}

// placeKey is an origin and a path, compared without building a string (no allocation on the
// path of every signed request).
type placeKey struct {
	origin originKey
	path   string
}

type destEntry struct {
	origin originKey
	path   string // "/" normalised, no trailing slash except root
	prefix bool
	// tmpl is set for a Template entry: one pattern per segment of the decoded path.
	tmpl [][]globTok
}

// DestinationsBuilder builds a Destinations.
type DestinationsBuilder struct{ d Destinations }

// Exact adds a URL that is a Session destination by itself (query ignored).
func (b *DestinationsBuilder) Exact(raw string) error { return b.add(raw, false) }

// Prefix adds a URL whose path and every path below it are Session destinations. A URL whose
// path is the root ("/" or empty) adds the root alone.
func (b *DestinationsBuilder) Prefix(raw string) error { return b.add(raw, true) }

// Template adds a URL template (spec 5.2, 7: an OpenAPI server URL joined with a path template,
// OpenAPI 3.1 §4.8.8 "Path Templating"): every URL whose decoded path has the same segments,
// with each {expression} standing for one or more characters of one segment, is a Session
// destination. The template's literal text may be percent-encoded; it must not hold a "." or
// ".." segment or a backslash.
func (b *DestinationsBuilder) Template(raw string) error {
	i := strings.Index(raw, "://")
	if i < 0 {
		return fmt.Errorf("Session destination: %w", &SchemeError{URL: raw})
	}
	j := strings.IndexByte(raw[i+3:], '/')
	origin, path := raw, "/"
	if j >= 0 {
		origin, path = raw[:i+3+j], raw[i+3+j:]
	}
	if strings.ContainsAny(origin, "{}") {
		return fmt.Errorf("Session destination %q: template expressions are allowed in the path only", raw)
	}
	u, err := CheckURL(origin + "/")
	if err != nil {
		return fmt.Errorf("Session destination: %w", err)
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(path, "?#") {
		return fmt.Errorf("Session destination %q: a URL template has no query or fragment", raw)
	}
	tmpl, err := parseTemplate(cleanPath(path))
	if err != nil {
		return fmt.Errorf("Session destination %q: %w", raw, err)
	}
	b.d.entries = append(b.d.entries, destEntry{origin: originOf(u), path: cleanPath(path), tmpl: tmpl})
	return nil
}

// parseTemplate compiles a path template into one pattern per segment: literal text (decoded)
// and template expressions.
func parseTemplate(p string) ([][]globTok, error) {
	var out [][]globTok
	for seg := range strings.SplitSeq(strings.TrimPrefix(p, "/"), "/") {
		var parts []string
		rest := seg
		for rest != "" {
			open := strings.IndexByte(rest, '{')
			if open < 0 {
				parts = append(parts, rest)
				break
			}
			if open > 0 {
				parts = append(parts, rest[:open])
			}
			end := strings.IndexByte(rest[open:], '}')
			if end < 0 || strings.ContainsAny(rest[open+1:open+end], "{/") {
				return nil, fmt.Errorf("the template expression in segment %q is not closed", seg)
			}
			parts = append(parts, "")
			rest = rest[open+end+1:]
		}
		for k, part := range parts {
			if part == "" {
				continue
			}
			if strings.ContainsRune(part, '}') {
				return nil, fmt.Errorf("segment %q has an unmatched \"}\"", seg)
			}
			dec, err := url.PathUnescape(part)
			if err != nil || strings.ContainsAny(dec, "/\\") {
				return nil, fmt.Errorf("segment %q holds a malformed escape, an encoded slash or a backslash", seg)
			}
			parts[k] = dec
		}
		if len(parts) == 1 && (parts[0] == "." || parts[0] == "..") {
			return nil, fmt.Errorf("segment %q is a dot-segment", seg)
		}
		out = append(out, compileSegment(parts))
	}
	return out, nil
}

// Exclude removes one exact URL (e.g. a description document) from the destinations.
func (b *DestinationsBuilder) Exclude(raw string) error {
	u, err := CheckURL(raw)
	if err != nil {
		return err
	}
	if b.d.excluded == nil {
		b.d.excluded = map[placeKey]bool{}
	}
	b.d.excluded[placeKey{originOf(u), cleanPath(u.EscapedPath())}] = true
	return nil
}

// Build returns the Destinations.
func (b *DestinationsBuilder) Build() *Destinations {
	d := b.d
	d.entries = append([]destEntry(nil), b.d.entries...)
	d.origins = map[originKey]*originIndex{}
	for i := range d.entries {
		e := &d.entries[i]
		x := d.origins[e.origin]
		if x == nil {
			x = &originIndex{exact: map[string]bool{}, prefixes: map[string]bool{}}
			d.origins[e.origin] = x
		}
		switch {
		case e.tmpl != nil:
			if x.tmpl == nil {
				x.tmpl = &tmplNode{}
			}
			x.tmpl.add(e.tmpl)
		case e.prefix:
			x.exact[e.path], x.prefixes[e.path] = true, true
		default:
			x.exact[e.path] = true
		}
	}
	return &d
}

func (b *DestinationsBuilder) add(raw string, prefix bool) error {
	u, err := CheckURL(raw)
	if err != nil {
		return fmt.Errorf("Session destination: %w", err)
	}
	p := cleanPath(u.EscapedPath())
	if p == "/" {
		prefix = false // never a whole origin (spec 5.2)
	}
	b.d.entries = append(b.d.entries, destEntry{origin: originOf(u), path: p, prefix: prefix})
	return nil
}

// Allows reports whether u is a Session destination.
func (d *Destinations) Allows(u *url.URL) bool {
	// A dot-segment or encoded slash could make the server see another resource than the text
	// compared here (e.g. /api/../oauth/token): such a URL is never a destination.
	if u == nil || CheckPath(u) != nil {
		return false
	}
	return d.allowsChecked(u)
}

// allowsChecked is Allows for a URL whose path CheckPath (or CheckURL) accepted.
func (d *Destinations) allowsChecked(u *url.URL) bool {
	if d == nil || u == nil || u.Scheme != "https" || u.User != nil || u.Opaque != "" {
		return false
	}
	// Discovery and metadata documents live under /.well-known/ (RFC 8615), and exclusions
	// win: neither is ever a destination.
	o, p := originOf(u), cleanPath(u.EscapedPath())
	if p == "/.well-known" || strings.HasPrefix(p, "/.well-known/") || d.excluded[placeKey{o, p}] {
		return false
	}
	x := d.origins[o]
	if x == nil {
		return false
	}
	if x.exact[p] {
		return true
	}
	for k := 1; k < len(p); k++ { // each ancestor /a, /a/b, ... of p
		if p[k] == '/' && x.prefixes[p[:k]] {
			return true
		}
	}
	return x.tmpl != nil && x.tmpl.match(strings.TrimPrefix(cleanPath(u.Path), "/"))
}

// Refuses reports whether u can never be a Session destination of this set, whatever entry is
// added: a path under /.well-known/, an excluded URL (a description document, an OAuth endpoint,
// a page), or a path with dot-segments or encoded slashes. A URL it doesn't refuse may still not
// be a destination (Allows).
func (d *Destinations) Refuses(u *url.URL) bool {
	if u == nil || u.Scheme != "https" || u.User != nil || u.Opaque != "" || CheckPath(u) != nil {
		return true
	}
	p := cleanPath(u.EscapedPath())
	if p == "/.well-known" || strings.HasPrefix(p, "/.well-known/") {
		return true
	}
	return d != nil && d.excluded[placeKey{originOf(u), p}]
}

// globTok is one token of a segment pattern: a literal byte, any one byte, or any run of bytes.
// A template expression is "any one" followed by "any run" (one or more characters).
type globTok struct {
	kind byte // 'l' literal, '?' any one, '*' any run
	c    byte
}

func compileSegment(parts []string) []globTok {
	var out []globTok
	for _, part := range parts {
		if part == "" {
			out = append(out, globTok{kind: '?'}, globTok{kind: '*'})
			continue
		}
		for i := 0; i < len(part); i++ {
			out = append(out, globTok{kind: 'l', c: part[i]})
		}
	}
	return out
}

// globMatch is the classic wildcard match with backtracking to the last run: O(len(pat) *
// len(s)) at worst, so a hostile template cannot make a check slow.
func globMatch(pat []globTok, s string) bool {
	p, i, starP, starI := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pat) && (pat[p].kind == '?' || pat[p].kind == 'l' && pat[p].c == s[i]):
			p++
			i++
		case p < len(pat) && pat[p].kind == '*':
			starP, starI = p, i
			p++
		case starP >= 0:
			p = starP + 1
			starI++
			i = starI
		default:
			return false
		}
	}
	for p < len(pat) && pat[p].kind == '*' {
		p++
	}
	return p == len(pat)
}

// originKey is an https origin: the host lowercased, and the port ("" for 443).
type originKey struct{ host, port string }

// originOf is u's origin (https is the only scheme a destination has), without allocating when
// the host is already lowercase.
func originOf(u *url.URL) originKey {
	k := originKey{host: strings.ToLower(u.Hostname()), port: u.Port()}
	if k.port == "443" {
		k.port = ""
	}
	return k
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

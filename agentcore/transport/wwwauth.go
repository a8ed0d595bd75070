package transport

import (
	"fmt"
	"strings"
)

// Challenge is one challenge of a WWW-Authenticate header (RFC 9110 §11.6.1).
type Challenge struct {
	Scheme  string            // as sent; compare case-insensitively
	Token68 string            // set when the challenge carries a token68 instead of parameters
	Params  map[string]string // parameter names lowercased, values unquoted
}

// Param returns the value of parameter name (case-insensitive).
func (c Challenge) Param(name string) string { return c.Params[strings.ToLower(name)] }

// ParseChallenges parses WWW-Authenticate field values (one or several header lines) into
// challenges, following the RFC 9110 §11.6.1 grammar:
//
//	WWW-Authenticate = #challenge
//	challenge  = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
//	auth-param = token BWS "=" BWS ( token / quoted-string )
//
// The hard part is that commas separate both challenges and parameters; a name followed by "="
// is a parameter, anything else starts a new challenge. Malformed input returns the challenges
// parsed before the error together with the error.
func ParseChallenges(values []string) ([]Challenge, error) {
	var out []Challenge
	for _, v := range values {
		cs, err := parseChallengeLine(v)
		out = append(out, cs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

type authLexer struct {
	s string
	i int
}

func (l *authLexer) skipOWS() {
	for l.i < len(l.s) && (l.s[l.i] == ' ' || l.s[l.i] == '\t') {
		l.i++
	}
}

func (l *authLexer) skipListSep() {
	for l.i < len(l.s) && (l.s[l.i] == ' ' || l.s[l.i] == '\t' || l.s[l.i] == ',') {
		l.i++
	}
}

func (l *authLexer) token() string {
	start := l.i
	for l.i < len(l.s) && isTchar(l.s[l.i]) {
		l.i++
	}
	return l.s[start:l.i]
}

// peekParam reports whether the input at the cursor is `token BWS "=" BWS (token / quoted-string)`,
// that is an auth-param rather than a new challenge or a token68 padding.
func (l *authLexer) peekParam() bool {
	j := l.i
	for j < len(l.s) && isTchar(l.s[j]) {
		j++
	}
	if j == l.i {
		return false
	}
	for j < len(l.s) && (l.s[j] == ' ' || l.s[j] == '\t') {
		j++
	}
	if j >= len(l.s) || l.s[j] != '=' {
		return false
	}
	j++
	for j < len(l.s) && (l.s[j] == ' ' || l.s[j] == '\t') {
		j++
	}
	return j < len(l.s) && (l.s[j] == '"' || isTchar(l.s[j]))
}

func (l *authLexer) quoted() (string, error) {
	// at '"'
	l.i++
	var b strings.Builder
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case c == '"':
			l.i++
			return b.String(), nil
		case c == '\\':
			if l.i+1 >= len(l.s) {
				return "", fmt.Errorf("WWW-Authenticate: quoted-string ends in a backslash")
			}
			b.WriteByte(l.s[l.i+1])
			l.i += 2
		case c < 0x20 && c != '\t' || c == 0x7f:
			return "", fmt.Errorf("WWW-Authenticate: control character in quoted-string")
		default:
			b.WriteByte(c)
			l.i++
		}
	}
	return "", fmt.Errorf("WWW-Authenticate: unterminated quoted-string")
}

func parseChallengeLine(v string) ([]Challenge, error) {
	l := &authLexer{s: v}
	var out []Challenge
	for {
		l.skipListSep()
		if l.i >= len(l.s) {
			return out, nil
		}
		scheme := l.token()
		if scheme == "" {
			return out, fmt.Errorf("WWW-Authenticate: expected an auth-scheme at offset %d of %q", l.i, v)
		}
		c := Challenge{Scheme: scheme, Params: map[string]string{}}
		// A challenge ends at the end of input, or at a comma not followed by an auth-param.
		if l.i < len(l.s) && l.s[l.i] != ' ' && l.s[l.i] != '\t' && l.s[l.i] != ',' {
			return out, fmt.Errorf("WWW-Authenticate: unexpected %q after auth-scheme %q", l.s[l.i], scheme)
		}
		l.skipOWS()
		if l.i < len(l.s) && l.s[l.i] != ',' && !l.peekParam() {
			// token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
			start := l.i
			for l.i < len(l.s) && isToken68(l.s[l.i]) {
				l.i++
			}
			for l.i < len(l.s) && l.s[l.i] == '=' {
				l.i++
			}
			if l.i == start {
				return out, fmt.Errorf("WWW-Authenticate: unexpected %q in challenge %q", l.s[l.i], scheme)
			}
			c.Token68 = l.s[start:l.i]
			l.skipOWS()
			if l.i < len(l.s) && l.s[l.i] != ',' {
				return out, fmt.Errorf("WWW-Authenticate: unexpected %q after token68 of %q", l.s[l.i], scheme)
			}
			out = append(out, c)
			continue
		}
		for {
			// Parameters are separated by commas (with empty list elements allowed).
			save := l.i
			l.skipListSep()
			if !l.peekParam() {
				l.i = save
				break
			}
			name := strings.ToLower(l.token())
			l.skipOWS()
			l.i++ // '='
			l.skipOWS()
			var val string
			if l.s[l.i] == '"' {
				q, err := l.quoted()
				if err != nil {
					out = append(out, c)
					return out, err
				}
				val = q
			} else {
				val = l.token()
			}
			if _, dup := c.Params[name]; dup {
				out = append(out, c)
				return out, fmt.Errorf("WWW-Authenticate: parameter %q repeated in challenge %q (RFC 9110 §11.2)", name, scheme)
			}
			c.Params[name] = val
			l.skipOWS()
			if l.i < len(l.s) && l.s[l.i] != ',' {
				out = append(out, c)
				return out, fmt.Errorf("WWW-Authenticate: unexpected %q after parameter %q", l.s[l.i], name)
			}
		}
		out = append(out, c)
	}
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+/", c) >= 0
}

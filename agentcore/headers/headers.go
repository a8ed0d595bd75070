// Package headers holds the Poppy request headers in one place, for the Personal Agent and the
// reference Company alike: their names, and their codecs.
//
//   - Spec 3.4: Poppy-Version is "major.minor" ([ParseVersion], [Compatible]); Poppy-Extensions
//     is an RFC 9651 List of Strings, each with a String "v" parameter ([FormatExtensions],
//     [ParseExtensions], [Declares]). A Poppy-Extensions field that fails to parse declares no
//     extensions.
//   - Spec 5.2: Poppy-Session carries the Session JWT (built by agentcore/session, checked by
//     agentcore/sessioncheck; only its name is here).
//   - Operations 6: Poppy-Approval is an RFC 9651 Dictionary with operation_id and revision as
//     Strings; other members are ignored ([FormatApproval], [ParseApproval]).
//   - Spec 8.2: the characters every ID of the protocol has ([ValidID]): Session IDs, Agent
//     IDs, conversation and message IDs, operation IDs and revisions.
//
// The structured fields are read and written with github.com/dunglas/httpsfv (RFC 9651); the
// version is two decimal numbers and needs no library.
package headers

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"
)

// Header names (spec 3.4, 5.2; Operations 6).
const (
	Session    = "Poppy-Session"
	Version    = "Poppy-Version"
	Extensions = "Poppy-Extensions"
	Approval   = "Poppy-Approval"
)

// Extension is one extension in one version, as Poppy-Extensions declares it (spec 3.3, 3.4).
type Extension struct {
	Name    string // e.g. "operations"
	Version string // e.g. "2"
}

// FormatExtensions serializes exts as the Poppy-Extensions value, e.g. `"operations";v="2"`,
// and "" for none. Every extension needs a name and a version, each name appears once, and both
// must be printable ASCII (RFC 9651 Strings).
func FormatExtensions(exts []Extension) (string, error) {
	if len(exts) == 0 {
		return "", nil
	}
	list := make(httpsfv.List, 0, len(exts))
	for i, x := range exts {
		if x.Name == "" || x.Version == "" {
			return "", fmt.Errorf("extension %q needs a name and a version (spec 3.3)", x.Name)
		}
		for _, y := range exts[:i] {
			if y.Name == x.Name {
				return "", fmt.Errorf("extension %q declared twice; declare one version of each (spec 3.3)", x.Name)
			}
		}
		it := httpsfv.NewItem(x.Name)
		it.Params.Add("v", x.Version)
		list = append(list, it)
	}
	s, err := httpsfv.Marshal(list)
	if err != nil {
		return "", fmt.Errorf("extension names and versions must be printable ASCII (RFC 9651 Strings): %w", err)
	}
	return s, nil
}

// ParseExtensions reads the Poppy-Extensions field lines of a request, in order (spec 3.4). A
// field that fails to parse declares nothing (nil); members that are not a String with a String
// "v" parameter are left out.
func ParseExtensions(values []string) []Extension {
	if len(values) == 0 {
		return nil
	}
	l, err := httpsfv.UnmarshalList(values)
	if err != nil {
		return nil
	}
	var out []Extension
	for _, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		name, ok := it.Value.(string)
		if !ok || it.Params == nil {
			continue
		}
		pv, ok := it.Params.Get("v")
		if !ok {
			continue
		}
		if v, ok := pv.(string); ok {
			out = append(out, Extension{Name: name, Version: v})
		}
	}
	return out
}

// Declares reports whether the Poppy-Extensions field lines declare extension name in version
// v (spec 3.4).
func Declares(values []string, name, v string) bool {
	for _, x := range ParseExtensions(values) {
		if x.Name == name && x.Version == v {
			return true
		}
	}
	return false
}

// FormatApproval serializes the Poppy-Approval value (Operations 6): an RFC 9651 Dictionary with
// operation_id and revision as Strings, e.g. `operation_id="exc_5Rt2", revision="1791487200-k3Jd9Qx2mW8v"`.
func FormatApproval(operationID, revision string) (string, error) {
	d := httpsfv.NewDictionary()
	d.Add("operation_id", httpsfv.NewItem(operationID))
	d.Add("revision", httpsfv.NewItem(revision))
	s, err := httpsfv.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("serializing the %s header: %w", Approval, err)
	}
	return s, nil
}

// ErrNoApproval is ParseApproval's error when the request carries no Poppy-Approval.
var ErrNoApproval = errors.New("the request carries no " + Approval + " header")

// ParseApproval reads the Poppy-Approval field lines of a request, in order (Operations 6):
// operation_id and revision must both be Strings; other members and parameters are ignored
// ("Companies MUST ignore members of Poppy-Approval they don't recognize"). No field:
// ErrNoApproval.
func ParseApproval(values []string) (operationID, revision string, err error) {
	if len(values) == 0 {
		return "", "", ErrNoApproval
	}
	d, err := httpsfv.UnmarshalDictionary(values)
	if err != nil {
		return "", "", fmt.Errorf("the %s header is not an RFC 9651 Dictionary (Operations extension v2, section 6): %w", Approval, err)
	}
	get := func(name string) (string, error) {
		m, ok := d.Get(name)
		if !ok {
			return "", fmt.Errorf("the %s header has no %s member (Operations extension v2, section 6)", Approval, name)
		}
		it, ok := m.(httpsfv.Item)
		if !ok {
			return "", fmt.Errorf("the %s member of the %s header is an Inner List, not a String (Operations extension v2, section 6)", name, Approval)
		}
		s, ok := it.Value.(string)
		if !ok {
			return "", fmt.Errorf("the %s member of the %s header is not a String (Operations extension v2, section 6)", name, Approval)
		}
		return s, nil
	}
	if operationID, err = get("operation_id"); err != nil {
		return "", "", err
	}
	if revision, err = get("revision"); err != nil {
		return "", "", err
	}
	return operationID, revision, nil
}

// ParseVersion reads a Poppy-Version value, "major.minor" (spec 3.4): two runs of decimal
// digits, nothing else.
func ParseVersion(v string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(v, ".")
	if !found {
		return 0, 0, false
	}
	ma, err1 := strconv.ParseUint(a, 10, 16)
	mi, err2 := strconv.ParseUint(b, 10, 16)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return int(ma), int(mi), true
}

// Compatible reports whether versions a and b are compatible (spec 3.4): the same major version
// and, before 1.0, the same minor version.
func Compatible(a, b string) bool {
	am, an, ok1 := ParseVersion(a)
	bm, bn, ok2 := ParseVersion(b)
	return ok1 && ok2 && am == bm && (am >= 1 || an == bn)
}

// Newer reports whether version a is newer than b; both must parse.
func Newer(a, b string) bool {
	am, an, _ := ParseVersion(a)
	bm, bn, _ := ParseVersion(b)
	return am > bm || am == bm && an > bn
}

// maxIDLen is the longest ID of spec 8.2.
const maxIDLen = 256

// ValidID reports whether s has the characters of the IDs in spec 8.2: 1 to 256 characters from
// the URL-safe base64 alphabet (RFC 4648 section 5): letters, digits, "-" and "_".
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

package oauth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// Plan returns the scopes a sign-in requests: every scope the task needs plus every scope
// already held that the User keeps, sorted and without duplicates (spec 4.7: request every scope
// still needed, including previously granted ones, never only the missing ones; RFC 6749 §3.3).
func Plan(needed, held []string) []string {
	var out []string
	for _, s := range append(append([]string(nil), held...), needed...) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Covers reports whether held includes every scope in needed.
func Covers(held, needed []string) bool {
	for _, n := range needed {
		if !slices.Contains(held, n) {
			return false
		}
	}
	return true
}

// validScopes checks OAuth scope syntax (RFC 6749 §3.3: scope-token = 1*NQCHAR).
func validScopes(scopes []string) error {
	if len(scopes) == 0 {
		return errors.New("name at least one scope to request: every sign-in request carries scope (spec 4.7)")
	}
	for _, s := range scopes {
		if s == "" {
			return errors.New("an empty scope name cannot be requested (RFC 6749 §3.3)")
		}
		for _, r := range s {
			if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
				return fmt.Errorf("scope %q is not valid OAuth scope syntax (RFC 6749 §3.3)", s)
			}
		}
	}
	return nil
}

// errNoScope is a token response that grants no scope. For a sign-in it is a decline (spec 4.7:
// "if the User approves none, it ends as a decline"): parseToken wraps ErrDeclined.
var errNoScope = errors.New("the Company granted no scope; a Poppy sign-in grants at least one (spec 4.7), so the tokens were not stored")

// CheckGranted checks the scope field of a token response against the requested scopes and
// returns the granted scopes (spec 4.7): absent means exactly the requested ones (RFC 6749
// §5.1); present, it must name at least one scope and none beyond those requested.
func CheckGranted(requested []string, scope *string) ([]string, error) {
	if scope == nil {
		return append([]string(nil), requested...), nil
	}
	granted := Plan(strings.Fields(*scope), nil)
	if len(granted) == 0 {
		return nil, errNoScope
	}
	var extra []string
	for _, g := range granted {
		if !slices.Contains(requested, g) {
			extra = append(extra, g)
		}
	}
	if len(extra) > 0 {
		return nil, fmt.Errorf("the Company granted scopes that were not requested (%s); a Company must not grant scopes beyond those requested (spec 4.7), so the tokens were not stored", strings.Join(extra, " "))
	}
	return granted, nil
}

// ScopeInfo describes one scope for the window (spec 4.7). Descriptions and hints are the
// Company's claims (spec 10.1), shown as text, never as the User's approval.
type ScopeInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Changes is none, reversible or irreversible. A scope without hints, or with a changes
	// value Poppydesk doesn't recognize, is shown as irreversible (spec 4.7).
	Changes string `json:"changes"`
	// PersonalData is true when the hints say so, or when the scope has no hints.
	PersonalData bool `json:"personal_data"`
	// Hinted is false when the Company gave no hints for the scope.
	Hinted bool `json:"hinted"`
	// Held is true when the account already holds the scope (it is requested again to keep it).
	Held bool `json:"held"`
}

// Describe returns the descriptions and hints of names from the Company's poppy.json.
func Describe(co *discovery.Company, names, held []string) []ScopeInfo {
	out := make([]ScopeInfo, 0, len(names))
	for _, n := range names {
		si := ScopeInfo{Name: n, Changes: "irreversible", PersonalData: true, Held: slices.Contains(held, n)}
		if co != nil {
			for _, s := range co.Scopes {
				if s.Name != n {
					continue
				}
				si.Description = s.Description
				if s.PersonalData != nil {
					si.Hinted = true
					si.PersonalData = *s.PersonalData
					switch s.Changes {
					case "none", "reversible":
						si.Changes = s.Changes
					}
				}
			}
		}
		out = append(out, si)
	}
	return out
}

// ScopeChoice is one scope on the sign-in screen (spec 4.7): the scope as [Describe] gives it,
// whether the model's sign-in request names it, and whether its checkbox starts ticked.
type ScopeChoice struct {
	ScopeInfo
	// Requested is set when the model's request names the scope.
	Requested bool `json:"requested"`
	// Checked is set when the box starts ticked.
	Checked bool `json:"checked"`
}

// Choices is the sign-in screen's scope policy (spec 4.7; RFC 9700 §2.3: request only what is
// needed). It lists every scope the Company describes (poppy.json auth.scopes and the issuer's
// scopes_supported), the scopes the model requested and the scopes the account holds, sorted
// and without duplicates, with their descriptions and hints. The boxes of requested and held
// scopes start ticked (held scopes are always requested again, spec 4.7); when there are
// neither, the boxes of the scopes whose hints say they change nothing start ticked, and no
// other. co may be nil (no Company scopes are known then).
func Choices(co *discovery.Company, requested, held []string) []ScopeChoice {
	var names []string
	if co != nil {
		for _, sc := range co.Scopes {
			names = append(names, sc.Name)
		}
		if co.AuthorizationServer != nil {
			names = append(names, co.AuthorizationServer.ScopesSupported...)
		}
	}
	names = append(names, requested...)
	out := []ScopeChoice{}
	ticked := false
	for _, si := range Describe(co, Plan(names, held), held) {
		c := ScopeChoice{ScopeInfo: si, Requested: slices.Contains(requested, si.Name)}
		c.Checked = c.Held || c.Requested
		ticked = ticked || c.Checked
		out = append(out, c)
	}
	if !ticked {
		for i := range out {
			out[i].Checked = out[i].Hinted && out[i].Changes == "none"
		}
	}
	return out
}

// SignInChoices returns [Choices] for signing in to co as account, with the scopes account holds
// there, for the window to show before the User decides (spec 4.7). It starts nothing.
func (c *Client) SignInChoices(ctx context.Context, co *discovery.Company, account string, requested []string) ([]ScopeChoice, error) {
	held, err := c.Held(ctx, co.Identifier, account)
	if err != nil {
		return nil, fmt.Errorf("reading the scopes the account %q holds at %s: %w", account, co.Identifier, err)
	}
	return Choices(co, requested, held), nil
}

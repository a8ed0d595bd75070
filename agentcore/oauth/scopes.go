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

// CheckGranted checks the scope field of a token response against the requested scopes and
// returns the granted scopes (spec 4.7): absent means exactly the requested ones (RFC 6749
// §5.1); present, it must name at least one scope and none beyond those requested.
func CheckGranted(requested []string, scope *string) ([]string, error) {
	if scope == nil {
		return append([]string(nil), requested...), nil
	}
	granted := Plan(strings.Fields(*scope), nil)
	if len(granted) == 0 {
		return nil, errors.New("the Company granted no scope; a Poppy sign-in grants at least one (spec 4.7), so the tokens were not stored")
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

// PlanSignIn returns what a sign-in for the task's needed scopes would request at the Company
// for account, with descriptions and hints, for the window to show before the User decides
// (spec 4.7). It starts nothing.
func (c *Client) PlanSignIn(ctx context.Context, co *discovery.Company, account string, needed []string) ([]ScopeInfo, error) {
	held, err := c.Held(ctx, co.Identifier, account)
	if err != nil {
		return nil, err
	}
	return Describe(co, Plan(needed, held), held), nil
}

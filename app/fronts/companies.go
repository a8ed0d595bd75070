package fronts

// The Companies screen's service (spec 3, 3.2, 4.6, 5.5, 9.1), over the Host's Companies
// (app/host_companies.go).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/app"
)

// Companies is the window's service for the Companies screen, over the Host's Companies:
// discovery ([app.Host.DiscoverCompany]), the list with accounts and excluded tasks
// ([app.Host.Companies]), sign-out and forgetting. Bound to the window: Discover, SignOut and
// Forget are user gestures there.
type Companies struct{ h *app.Host }

// CompanyEntry is one Company on the Companies screen.
type CompanyEntry struct {
	Company CompanyCard `json:"company"`
	// Accounts are the signed-in accounts, with their scopes (no token).
	Accounts []oauth.AccountStatus `json:"accounts"`
	// Problem says why the entry is incomplete (e.g. the keyring could not be read).
	Problem string `json:"problem,omitempty"`
	// ExcludedTasks are the tasks the Company chose not to offer through the protocol, with the
	// other way it gives, in plain words (spec 9.1, 9.2): the Company's text, shown as text.
	ExcludedTasks []ExcludedTaskEntry `json:"excludedTasks"`
	// ExcludedTasksProblem says why they could not be read ("" when they could, or when the
	// Company lists none).
	ExcludedTasksProblem string `json:"excludedTasksProblem,omitempty"`
	// ScopeWords are the Company's descriptions of the scopes the accounts hold, by scope (spec
	// 4.7; the Company's words, shown beside the scope's name). A scope without one is absent.
	ScopeWords map[string]string `json:"scopeWords"`
	// Demo is true for the demo's reference Company, whose account the demo signed in.
	Demo bool `json:"demo"`
	// DemoAccount is, on the demo's Company, the account the demo signs in ([app.DemoAccount]):
	// the window calls that one the demo's, and any other account there the user's own.
	DemoAccount string `json:"demoAccount,omitempty"`
}

// ExcludedTaskEntry is one task a Company chose not to offer, for the Companies screen.
type ExcludedTaskEntry struct {
	Task string `json:"task"`
	// Alternative is the other way the Company gives, in plain words ("" when none).
	Alternative string `json:"alternative"`
}

// excludedTaskEntries turns the excluded tasks into the screen's words: the Company's
// instructions, the pages it points to, and how many API operations or tools it points the agent
// to (the model's tools check those against the Company's descriptions).
func excludedTaskEntries(x *coverage.ExcludedTasks) []ExcludedTaskEntry {
	out := []ExcludedTaskEntry{}
	for _, t := range x.Tasks {
		e := ExcludedTaskEntry{Task: t.Task}
		if a := t.Alternative; a != nil {
			var parts []string
			if a.Instructions != "" {
				parts = append(parts, a.Instructions)
			}
			agent := 0
			for _, r := range a.References {
				if r.Type == coverage.RefWeb {
					parts = append(parts, "On the web: "+r.URL)
				} else {
					agent++
				}
			}
			if agent == 1 {
				parts = append(parts, "The Company also points your agent to one of its API operations or tools.")
			} else if agent > 1 {
				parts = append(parts, fmt.Sprintf("The Company also points your agent to %d of its API operations or tools.", agent))
			}
			e.Alternative = strings.Join(parts, " ")
		}
		out = append(out, e)
	}
	return out
}

// CompanyList is a page of the Companies screen, in name order; Next continues it ("" on the
// last page) and Total counts every discovered Company.
type CompanyList struct {
	Companies []CompanyEntry `json:"companies"`
	Next      string         `json:"next"`
	Total     int            `json:"total"`
}

func (c *Companies) ctx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(windowCause(c.h.Context()), d)
}

// companyEntryOf converts what the Host knows of a Company into its entry on the Companies screen: the
// verified card, the accounts, the Company's words for their scopes and its excluded tasks, and
// in plain words what could not be read.
func companyEntryOf(st app.CompanyState) CompanyEntry {
	e := CompanyEntry{Accounts: []oauth.AccountStatus{}, ExcludedTasks: []ExcludedTaskEntry{}, ScopeWords: map[string]string{}, Demo: st.Demo}
	if st.Demo {
		e.DemoAccount = app.DemoAccount
	}
	co := st.Company
	if co == nil {
		e.Company = CompanyCard{Identifier: st.Identifier, Name: st.Identifier}
		e.Problem = "Poppydesk could not read what it stored about this Company; discover its domain again. (" + st.Err.Error() + ")"
		return e
	}
	e.Company = cardOf(co)
	switch {
	case errors.Is(st.ExcludedErr, discovery.ErrNotCached):
		e.ExcludedTasksProblem = "Poppydesk is reading the tasks this Company does not offer."
	case st.ExcludedErr != nil:
		e.ExcludedTasksProblem = "Poppydesk could not read the tasks this Company does not offer: " + st.ExcludedErr.Error()
	case st.Excluded != nil:
		e.ExcludedTasks = excludedTaskEntries(st.Excluded)
	}
	if st.AccountsErr != nil {
		e.Problem = "Poppydesk could not read the accounts from the system keyring: " + st.AccountsErr.Error()
	} else if st.Accounts != nil {
		e.Accounts = st.Accounts
	}
	var names []string
	for _, a := range e.Accounts {
		names = append(names, a.Scopes...)
	}
	for _, s := range oauth.Describe(co, names, nil) {
		if s.Description != "" {
			e.ScopeWords[s.Name] = visible(s.Description)
		}
	}
	return e
}

// List returns a page of the discovered Companies with their signed-in accounts, in name order
// (without case, then identifier), from cursor ("" for the first page; Next of the previous
// one), at most limit of them (1 to app.CompaniesPageMax). The list never waits on one Company's
// server: excluded tasks not in the cache are read in the background, and
// [app.EventCompaniesChanged] follows.
func (c *Companies) List(cursor string, limit int) (CompanyList, error) {
	if err := c.h.Refusal(); err != nil {
		return CompanyList{}, err
	}
	ctx, cancel := c.ctx(30 * time.Second)
	defer cancel()
	page, err := c.h.Companies(ctx, cursor, limit)
	if err != nil {
		return CompanyList{}, err
	}
	out := CompanyList{Companies: make([]CompanyEntry, 0, len(page.Companies)), Next: page.Next, Total: page.Total}
	for _, st := range page.Companies {
		out.Companies = append(out.Companies, companyEntryOf(st))
	}
	return out, nil
}

// Discover finds and verifies the Company at domain ("example.com"; host:port in the demo) as
// the User asked in the window (spec 3). Errors name the check that failed and its section, and
// when developer mode would help, say so in the window's words.
func (c *Companies) Discover(domain string) (CompanyEntry, error) {
	if err := c.h.Refusal(); err != nil {
		return CompanyEntry{}, err
	}
	domain = strings.TrimSpace(domain)
	domain = strings.TrimPrefix(domain, "https://")
	domain = strings.TrimSuffix(domain, "/")
	if domain == "" || strings.ContainsAny(domain, "/ ?#@") {
		return CompanyEntry{}, errors.New("type a domain such as example.com (no path): Poppydesk reads https://{domain}/.well-known/poppy.json")
	}
	ctx, cancel := c.ctx(60 * time.Second)
	defer cancel()
	st, err := c.h.DiscoverCompany(ctx, domain)
	if err != nil {
		return CompanyEntry{}, &app.Error{Message: "Poppydesk could not verify " + domain + " as a Company", Err: err, Hint: windowHint(err, domain)}
	}
	return companyEntryOf(st), nil
}

// windowHint is discovery's advice when developer mode would help, naming the Settings screen
// where the command line's words name its flags ("" when developer mode is not the answer).
func windowHint(err error, domain string) string {
	return strings.NewReplacer("add it with --dev-company "+domain, "add "+domain+" in Settings → Developer mode",
		"give its certificate with --dev-ca FILE and the Company with --dev-company "+domain, "add "+domain+" and its CA file in Settings → Developer mode").
		Replace(discovery.DeveloperHint(err, domain))
}

// SignOut revokes every refresh token held for the account at the Company and deletes its
// tokens (spec 4.6, 5.5).
func (c *Companies) SignOut(company, account string) error {
	if err := c.h.Refusal(); err != nil {
		return err
	}
	ctx, cancel := c.ctx(60 * time.Second)
	defer cancel()
	return c.h.SignOut(ctx, company, account)
}

// Forget signs every account out of the Company and deletes what Poppydesk keeps about it
// ([app.Host.ForgetCompany]).
func (c *Companies) Forget(company string) error {
	if err := c.h.Refusal(); err != nil {
		return err
	}
	ctx, cancel := c.ctx(60 * time.Second)
	defer cancel()
	return c.h.ForgetCompany(ctx, company)
}

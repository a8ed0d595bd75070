package conformance

// The documents a Company serves at the same time (spec 3.4): poppy.json and every document
// its supported_versions lists must have the same organization.domain and select the same
// issuer, so a new version does not change the Company's identifier. Discovery reads only the
// document of the version it chose; this probe reads the others.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

const (
	probeVersionsAgree = "discovery: every served version names the same domain and issuer"
	probeScopeHints    = "discovery: every scope hint has changes and personal_data"
)

// versionDoc is the part of a poppy.json the probe compares.
type versionDoc struct {
	ProtocolVersion   string            `json:"protocol_version"`
	SupportedVersions map[string]string `json:"supported_versions"`
	Organization      struct {
		Domain string `json:"domain"`
	} `json:"organization"`
	Auth *struct {
		Issuer string `json:"issuer"`
	} `json:"auth"`
}

// versionsProbe compares the documents of the versions served (spec 3.4) and reads the scope
// hints of the chosen version's document (spec 4.7: both fields in each entry).
func (r *run) versionsProbe(ctx context.Context) {
	if why := r.need(false); why != "" {
		r.skipAll(why, [2]string{probeVersionsAgree, inspect.RuleDiscoveryVersionsAgree}, [2]string{probeScopeHints, inspect.RuleScopeHints})
		return
	}
	var chosen []byte
	fetch := func(u string) (versionDoc, string) {
		var d versionDoc
		a := r.do(ctx, call{method: http.MethodGet, url: u})
		if a.status != http.StatusOK || json.Unmarshal(a.body, &d) != nil {
			return d, fmt.Sprintf("%s got %s, not HTTP 200 with a JSON document", u, a.words())
		}
		if u == r.co.DocumentURL {
			chosen = a.body
		}
		return d, ""
	}
	defer func() {
		if chosen == nil {
			if _, why := fetch(r.co.DocumentURL); why != "" {
				r.add(probeScopeHints, inspect.RuleScopeHints, Skip, "the document of the chosen version could not be read again: "+why)
				return
			}
		}
		r.check(probeScopeHints, inspect.RuleScopeHints, joinBad(inspect.ScopeHintProblems(chosen), "a Company includes both fields in each entry (spec 4.7); a Personal Agent cannot tell what a scope allows without them"),
			"every auth.scope_hints entry of the "+r.co.Version+" document has changes and personal_data")
	}()
	main, why := fetch(r.co.PoppyJSONURL)
	if why != "" {
		r.add(probeVersionsAgree, inspect.RuleDiscoveryVersionsAgree, Skip, "poppy.json could not be read again: "+why)
		return
	}
	docs := map[string]string{main.ProtocolVersion: r.co.PoppyJSONURL}
	for v, u := range main.SupportedVersions {
		if _, ok := docs[v]; !ok {
			docs[v] = u
		}
	}
	var bad, read []string
	for v, u := range docs {
		if v == r.co.Version || u == r.co.DocumentURL {
			continue
		}
		d := main
		if u != r.co.PoppyJSONURL {
			if d, why = fetch(u); why != "" {
				bad = append(bad, fmt.Sprintf("the %s document: %s", v, why))
				continue
			}
		}
		read = append(read, v)
		if !strings.EqualFold(d.Organization.Domain, r.co.Organization.Domain) {
			bad = append(bad, fmt.Sprintf("the %s document (%s) has organization.domain %q, the %s document %q", v, u, d.Organization.Domain, r.co.Version, r.co.Organization.Domain))
		}
		if d.Auth != nil && d.Auth.Issuer != "" && d.Auth.Issuer != r.co.Issuer {
			bad = append(bad, fmt.Sprintf("the %s document (%s) selects the issuer %q, the %s document %q", v, u, d.Auth.Issuer, r.co.Version, r.co.Issuer))
		}
	}
	switch {
	case len(bad) > 0:
		r.add(probeVersionsAgree, inspect.RuleDiscoveryVersionsAgree, Fail, joinBad(bad, "every document served at the same time has the same organization.domain and issuer, so the Company identifier, User IDs and refresh tokens survive a version change (spec 3.4)"))
	case len(read) == 0:
		r.add(probeVersionsAgree, inspect.RuleDiscoveryVersionsAgree, Skip, "poppy.json lists no document of another version")
	default:
		r.add(probeVersionsAgree, inspect.RuleDiscoveryVersionsAgree, Pass, fmt.Sprintf("the documents of %s name the domain and issuer of the %s document", strings.Join(read, ", "), r.co.Version))
	}
}

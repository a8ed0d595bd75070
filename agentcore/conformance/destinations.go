package conformance

// The Session destinations probes (spec 5.2): what the OpenAPI descriptions make Session
// destinations, as discovery read them. Nothing is sent: discovery already fetched the
// descriptions (without credentials) and recorded their request URLs (Company.Described).

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

var templateExpr = regexp.MustCompile(`\{[^{}/]*\}`)

func (r *run) destinationProbes() {
	const (
		listed = "destinations: descriptions list only their API's request URLs"
		atRoot = "destinations: descriptions are served below their API"
	)
	if why := r.need(false); why != "" {
		r.skipAll(why, [2]string{listed, inspect.RuleDestinationsDescribed}, [2]string{atRoot, inspect.RuleDescriptionAtRoot})
		return
	}
	dest, err := r.co.SessionDestinations()
	if err != nil {
		r.skipAll("the Company's Session destinations could not be built: "+err.Error(),
			[2]string{listed, inspect.RuleDestinationsDescribed}, [2]string{atRoot, inspect.RuleDescriptionAtRoot})
		return
	}
	var bad, roots []string
	n := 0
	for _, a := range r.co.Document.APIs {
		if a.Type != "openapi" {
			continue
		}
		n++
		if u, err := url.Parse(a.URL); err == nil && path.Dir(u.Path) == "/" {
			roots = append(roots, a.URL)
		}
		for _, t := range r.co.Described[a.URL] {
			// A concrete URL of the template: each expression stands for one segment's text.
			u, err := url.Parse(templateExpr.ReplaceAllString(t, "x"))
			if err != nil {
				continue
			}
			switch {
			case u.Path == "" || u.Path == "/":
				bad = append(bad, t+" (the origin's root, a web page)")
			case strings.HasPrefix(u.Path, "/.well-known/"):
				bad = append(bad, t+" (a discovery or metadata document, RFC 8615)")
			case dest.Refuses(u):
				bad = append(bad, t+" (a protocol document, OAuth endpoint or page poppy.json names)")
			}
		}
	}
	if n == 0 {
		r.skipAll("poppy.json lists no openapi API", [2]string{listed, inspect.RuleDestinationsDescribed}, [2]string{atRoot, inspect.RuleDescriptionAtRoot})
		return
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		more := ""
		if len(bad) > 6 {
			more = fmt.Sprintf(" and %d more", len(bad)-6)
			bad = bad[:6]
		}
		r.add(listed, inspect.RuleDestinationsDescribed, Fail, fmt.Sprintf("the OpenAPI description lists request URLs that never carry the Session header: %s%s; a Personal Agent that trusted it would send the Session JWT there", strings.Join(bad, ", "), more))
	} else {
		r.add(listed, inspect.RuleDestinationsDescribed, Pass, fmt.Sprintf("%d openapi API(s): every request URL is the API's own", n))
	}
	if len(roots) > 0 {
		r.add(atRoot, inspect.RuleDescriptionAtRoot, Fail, fmt.Sprintf("the OpenAPI description is served at the origin's root (%s), so its folder is the whole origin; Poppydesk takes destinations from its servers and paths only", strings.Join(roots, ", ")))
	} else {
		r.add(atRoot, inspect.RuleDescriptionAtRoot, Pass, "every OpenAPI description is served below the origin's root")
	}
}

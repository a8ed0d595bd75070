package conformance

// The MCP servers' protected resource metadata (spec 7 "MCP servers", RFC 9728 §3.1): for each
// mcp entry of apis, the metadata at /.well-known/oauth-protected-resource followed by the
// server's path must name the entry's url as its resource, and, when the Company has an
// issuer, list that issuer in authorization_servers.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

const probeMCPMetadata = "mcp: protected resource metadata names the server and the issuer"

func (r *run) mcpProbes(ctx context.Context) {
	if why := r.need(false); why != "" {
		r.add(probeMCPMetadata, inspect.RuleMCPResourceMetadata, Skip, why)
		return
	}
	var bad, good, none []string
	for _, a := range r.co.Document.APIs {
		if a.Type != "mcp" {
			continue
		}
		u, err := url.Parse(a.URL)
		if err != nil || u.Scheme != "https" {
			continue // discovery's HTTPS check reports it
		}
		meta := u.Scheme + "://" + u.Host + "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
		ans := r.do(ctx, call{method: http.MethodGet, url: meta})
		if ans.status == http.StatusNotFound {
			none = append(none, a.URL)
			continue
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if ans.status != http.StatusOK || json.Unmarshal(ans.body, &doc) != nil {
			bad = append(bad, fmt.Sprintf("the metadata of %s at %s got %s, not HTTP 200 with a JSON object", a.URL, meta, ans.words()))
			continue
		}
		if doc.Resource != a.URL {
			bad = append(bad, fmt.Sprintf("the metadata of %s names the resource %q; it must equal the url poppy.json lists, character for character", a.URL, doc.Resource))
		} else {
			r.mcpServers = append(r.mcpServers, a.URL)
		}
		if r.co.Issuer != "" && !slices.Contains(doc.AuthorizationServers, r.co.Issuer) {
			bad = append(bad, fmt.Sprintf("the metadata of %s lists the authorization servers %q, not the Company's issuer %s", a.URL, doc.AuthorizationServers, r.co.Issuer))
		}
		good = append(good, a.URL)
	}
	switch {
	case len(bad) > 0:
		r.add(probeMCPMetadata, inspect.RuleMCPResourceMetadata, Fail, joinBad(bad, "an MCP server's protected resource metadata names its url as resource and the Company's issuer (spec 7)"))
	case len(good) > 0:
		r.add(probeMCPMetadata, inspect.RuleMCPResourceMetadata, Pass, fmt.Sprintf("the metadata of %s names its url and the issuer", strings.Join(good, ", ")))
	case len(none) > 0:
		r.add(probeMCPMetadata, inspect.RuleMCPResourceMetadata, Skip, fmt.Sprintf("%s serves no protected resource metadata (HTTP 404): it takes no access tokens, so spec 7's rules for it do not apply", strings.Join(none, ", ")))
	default:
		r.add(probeMCPMetadata, inspect.RuleMCPResourceMetadata, Skip, "poppy.json lists no mcp API")
	}
}

package refcompany

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// GitHubDescriptionFile is where scripts/bootstrap.sh installs GitHub's REST API description
// (npm's @octokit/openapi, pinned in testdata/npm/package-lock.json of this package): a large real
// OpenAPI 3.0.3 document (13 MB, 1,223 operations) that no one here wrote. Relative to this
// package's directory.
const GitHubDescriptionFile = "testdata/npm/node_modules/@octokit/openapi/generated/api.github.com.json"

// GitHubDescription reads GitHubDescriptionFile. It is never downloaded at run time: when it is
// missing, the error says how to install it.
func GitHubDescription() ([]byte, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("refcompany: cannot locate the package directory to read GitHub's description")
	}
	path := filepath.Join(filepath.Dir(self), filepath.FromSlash(GitHubDescriptionFile))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("refcompany: GitHub's OpenAPI description is not installed (%w); run scripts/bootstrap.sh, which runs npm ci in agentcore/refcompany/testdata/npm", err)
	}
	return data, nil
}

// extraAPI is one OpenAPI description served under a path prefix of the shop host.
type extraAPI struct {
	prefix  string
	summary string
	body    []byte
	etag    string
	handler http.Handler
}

// AddOpenAPI serves description (an OpenAPI document in JSON) at PREFIX/openapi.json on the
// shop host, with its servers replaced by the one server Origin()+prefix, and lists it in every
// poppy.json as an openapi API (spec 3.1, 7) with summary as its description. Every other
// request under prefix goes to h (nil: 404), so an operation called at the description's server
// URL reaches h. The description is served like the discovery documents: Cache-Control as
// SetCacheControl says, a strong ETag, 304 to a matching If-None-Match. It returns the
// description's URL. prefix is a path like "/github" outside the Shop's own paths.
func (s *Server) AddOpenAPI(prefix string, description []byte, summary string, h http.Handler) (string, error) {
	if !strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") || strings.HasPrefix(prefix, "/api") ||
		strings.HasPrefix(prefix, "/poppy") || strings.HasPrefix(prefix, "/.well-known") {
		return "", fmt.Errorf("refcompany: %q is not a free path prefix for an extra API (use e.g. /github)", prefix)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(description, &doc); err != nil {
		return "", fmt.Errorf("refcompany: the extra API's description is not a JSON object: %w", err)
	}
	servers, _ := json.Marshal([]any{map[string]any{"url": s.Origin() + prefix}})
	doc["servers"] = servers
	body, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	if h == nil {
		h = http.NotFoundHandler()
	}
	x := &extraAPI{prefix: prefix, summary: summary, body: body, etag: fmt.Sprintf(`"%x"`, fnv64(body)), handler: h}
	s.mu.Lock()
	s.extraAPIs = append(s.extraAPIs, x)
	s.mu.Unlock()
	return s.Origin() + prefix + "/openapi.json", nil
}

func (s *Server) extraAPIAt(p string) *extraAPI {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.extraAPIs {
		if p == x.prefix || strings.HasPrefix(p, x.prefix+"/") {
			return x
		}
	}
	return nil
}

func (s *Server) listExtraAPIs(doc map[string]any) {
	s.mu.Lock()
	xs := slices.Clone(s.extraAPIs)
	s.mu.Unlock()
	list, _ := doc["apis"].([]any)
	for _, x := range xs {
		list = append(list, map[string]any{"type": "openapi", "url": s.Origin() + x.prefix + "/openapi.json", "description": x.summary})
	}
	doc["apis"] = list
}

func (x *extraAPI) serve(s *Server, w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != x.prefix+"/openapi.json" {
		x.handler.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Cache-Control", s.cacheControl())
	w.Header().Set("ETag", x.etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && slices.Contains(strings.Split(strings.ReplaceAll(inm, " ", ""), ","), x.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(x.body)
}

package inspect

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/), the subset every entry needs. The
// exchanges are the stored ones, already redacted, so the archive holds no secret.
type harLog struct {
	Log harBody `json:"log"`
}

type harBody struct {
	Version string     `json:"version"`
	Creator harCreator `json:"creator"`
	Entries []harEntry `json:"entries"`
	Comment string     `json:"comment,omitempty"`
}

type harCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type harEntry struct {
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"`
	Request         harRequest  `json:"request"`
	Response        harResponse `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         harTimings  `json:"timings"`
	Comment         string      `json:"comment,omitempty"`
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type harRequest struct {
	Method      string   `json:"method"`
	URL         string   `json:"url"`
	HTTPVersion string   `json:"httpVersion"`
	Cookies     []harNV  `json:"cookies"`
	Headers     []harNV  `json:"headers"`
	QueryString []harNV  `json:"queryString"`
	PostData    *harPost `json:"postData,omitempty"`
	HeadersSize int      `json:"headersSize"`
	BodySize    int      `json:"bodySize"`
}

type harPost struct {
	MimeType string `json:"mimeType"`
	Text     string `json:"text"`
}

type harResponse struct {
	Status      int        `json:"status"`
	StatusText  string     `json:"statusText"`
	HTTPVersion string     `json:"httpVersion"`
	Cookies     []harNV    `json:"cookies"`
	Headers     []harNV    `json:"headers"`
	Content     harContent `json:"content"`
	RedirectURL string     `json:"redirectURL"`
	HeadersSize int        `json:"headersSize"`
	BodySize    int        `json:"bodySize"`
}

type harContent struct {
	Size     int    `json:"size"`
	MimeType string `json:"mimeType"`
	Text     string `json:"text,omitempty"`
}

type harTimings struct {
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// HAR writes exchanges as a HAR 1.2 archive. Each entry's comment carries its cause and
// findings; the decoded claims stay in the Inspector.
func HAR(exchanges []store.Exchange, creatorVersion string) ([]byte, error) {
	if creatorVersion == "" {
		creatorVersion = "dev"
	}
	l := harLog{Log: harBody{Version: "1.2", Creator: harCreator{Name: "Poppydesk", Version: creatorVersion},
		Entries: []harEntry{}, Comment: "Exported from the Poppydesk Inspector; secrets are masked."}}
	for _, ex := range exchanges {
		ms := float64(ex.Duration) / float64(time.Millisecond)
		e := harEntry{StartedDateTime: ex.At.UTC().Format(time.RFC3339Nano), Time: ms,
			Timings: harTimings{Send: 0, Wait: ms, Receive: 0}}
		e.Request = harRequest{Method: ex.Method, URL: ex.URL, HTTPVersion: "HTTP/1.1", Cookies: []harNV{},
			Headers: harHeaders(ex.RequestHeaders), QueryString: harQuery(ex.URL), HeadersSize: -1, BodySize: len(ex.RequestBody)}
		if len(ex.RequestBody) > 0 {
			mt := first(ex.RequestHeaders, "Content-Type", "application/octet-stream")
			e.Request.PostData = &harPost{MimeType: mt, Text: string(ex.RequestBody)}
		}
		status := ex.Status
		e.Response = harResponse{Status: status, StatusText: http.StatusText(status), HTTPVersion: "HTTP/1.1", Cookies: []harNV{},
			Headers: harHeaders(ex.ResponseHeaders), RedirectURL: first(ex.ResponseHeaders, "Location", ""), HeadersSize: -1,
			BodySize: len(ex.ResponseBody),
			Content:  harContent{Size: len(ex.ResponseBody), MimeType: first(ex.ResponseHeaders, "Content-Type", "application/octet-stream"), Text: string(ex.ResponseBody)}}
		if status == 0 {
			e.Response.StatusText = "no response"
			e.Response.HTTPVersion = ""
		}
		if d, err := ParseDetails(ex.Details); err == nil {
			var parts []string
			if d.Cause != nil {
				parts = append(parts, "cause: "+d.Cause.String())
			}
			if d.SID != "" {
				parts = append(parts, "sid: "+d.SID)
			}
			for _, f := range d.Findings {
				parts = append(parts, "finding: "+f.String())
			}
			e.Comment = strings.Join(parts, "\n")
		}
		l.Log.Entries = append(l.Log.Entries, e)
	}
	return json.MarshalIndent(l, "", "  ")
}

func harHeaders(h http.Header) []harNV {
	out := []harNV{}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			out = append(out, harNV{Name: k, Value: v})
		}
	}
	return out
}

func harQuery(raw string) []harNV {
	out := []harNV{}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range q[k] {
			out = append(out, harNV{Name: k, Value: v})
		}
	}
	return out
}

func first(h http.Header, k, def string) string {
	if v := h.Get(k); v != "" {
		return v
	}
	return def
}

// CurlOptions make an exported curl command work against a Company under development as
// exported: CAFile is the PEM file of the CA that issued the Company's certificates (developer
// mode's CA file), passed as --cacert; Resolve are --resolve entries (host:port:127.0.0.1) for
// developer hosts that do not resolve to loopback by themselves (curl resolves *.localhost
// itself). The zero value exports for a public Company.
type CurlOptions struct {
	CAFile  string
	Resolve []string
}

// curlComment heads every exported command: what a masked export can replay and what not.
const curlComment = "# Exported by Poppydesk's Inspector for reading what was sent: it is not re-signed, so replaying it\n" +
	"# needs no fresh Session JWT. Secrets are masked ([redacted]), so a request that carried a Session\n" +
	"# JWT, a token or a client assertion is refused if sent again as is (each Session JWT works once\n" +
	"# anyway, spec 5.3); one without them, such as discovery or metadata, works as exported.\n"

// Curl is ex as a curl command for a public Company (CurlFor with no options).
func Curl(ex store.Exchange) string { return CurlFor(ex, CurlOptions{}) }

// CurlFor is ex as a curl command, from the stored (masked) exchange, headed by a comment
// saying what it can replay, with o's CA file and host mappings.
func CurlFor(ex store.Exchange, o CurlOptions) string {
	var b strings.Builder
	b.WriteString(curlComment)
	b.WriteString("curl")
	if o.CAFile != "" {
		b.WriteString(" --cacert " + shellQuote(o.CAFile))
	}
	for _, r := range o.Resolve {
		b.WriteString(" --resolve " + shellQuote(r))
	}
	if ex.Method != http.MethodGet {
		b.WriteString(" -X " + shellQuote(ex.Method))
	}
	keys := make([]string, 0, len(ex.RequestHeaders))
	for k := range ex.RequestHeaders {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Accept-Encoding") {
			continue
		}
		for _, v := range ex.RequestHeaders[k] {
			b.WriteString(" \\\n  -H " + shellQuote(k+": "+v))
		}
	}
	if len(ex.RequestBody) > 0 {
		b.WriteString(" \\\n  --data-raw " + shellQuote(string(ex.RequestBody)))
	}
	b.WriteString(" \\\n  " + shellQuote(ex.URL))
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

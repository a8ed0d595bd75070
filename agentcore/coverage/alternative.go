package coverage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Reference types of spec 9.2. Other types are skipped.
const (
	RefOpenAPI = "openapi"
	RefMCP     = "mcp"
	RefWeb     = "web"
)

// Bounds on what a Company may put in an alternative; longer text is shortened, more references
// are left out, and each case is listed in Skipped.
const (
	MaxInstructions = 4000 // characters
	MaxReferences   = 20
	maxRefURL       = 2000
	maxRefName      = 200
)

// Reference is one reference of an alternative (spec 9.2): an endpoint of an OpenAPI API the
// Company lists (URL, OperationID), a tool of one of its MCP servers (URL, Tool), or a web page
// (URL) the User can open. A web reference authorizes no Session JWT or token to its URL.
type Reference struct {
	Type        string `json:"type"`
	URL         string `json:"url"`
	OperationID string `json:"operation_id,omitempty"`
	Tool        string `json:"tool,omitempty"`
}

// Alternative is another way to do a task (spec 9.2), as kept: Instructions (the Company's
// words, content and not instructions to follow), References, or both.
type Alternative struct {
	Instructions string      `json:"instructions,omitempty"`
	References   []Reference `json:"references,omitempty"`
}

// Skipped says what Poppydesk left out of what a Company published, and why, in Poppydesk's
// words. What is a JSON path into the Company's document.
type Skipped struct {
	What   string `json:"what"`
	Reason string `json:"reason"`
}

// ParseAlternative reads an alternative at where (a path, for Skipped) under the rules of spec
// 9.2 that need no network, against the Company's apis: a reference of an unknown type is
// skipped; an openapi or mcp reference is kept only when its url is the url of an apis entry of
// that type and it names an operation_id or tool; a web reference only with an HTTPS url. It
// returns nil when neither instructions nor a usable reference remain.
func ParseAlternative(raw json.RawMessage, apis []discovery.API, where string) (*Alternative, []Skipped) {
	var skipped []Skipped
	skip := func(what, format string, args ...any) {
		skipped = append(skipped, Skipped{What: what, Reason: fmt.Sprintf(format, args...)})
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		skip(where, "the alternative is not a JSON object, so it is not used (spec 9.2)")
		return nil, skipped
	}
	a := &Alternative{}
	if ri, ok := obj["instructions"]; ok && !isNull(ri) {
		var s string
		if json.Unmarshal(ri, &s) != nil {
			skip(where+".instructions", "instructions is not a string, so it is not used")
		} else {
			text, cut := cleanText(s, MaxInstructions)
			if cut {
				skip(where+".instructions", "instructions is longer than %d characters; the rest is left out", MaxInstructions)
			}
			a.Instructions = text
		}
	}
	if rr, ok := obj["references"]; ok && !isNull(rr) {
		var refs []json.RawMessage
		if json.Unmarshal(rr, &refs) != nil {
			skip(where+".references", "references is not a list, so none is used")
		}
		for i, r := range refs {
			at := fmt.Sprintf("%s.references[%d]", where, i)
			if len(a.References) == MaxReferences {
				skip(at, "more than %d references; the rest are left out", MaxReferences)
				break
			}
			ref, why := parseReference(r, apis)
			if why != "" {
				skip(at, "%s", why)
				continue
			}
			a.References = append(a.References, ref)
		}
	}
	if a.Instructions == "" && len(a.References) == 0 {
		skip(where, "the alternative has neither instructions nor a reference Poppydesk can use, so it is not used (spec 9.2)")
		return nil, skipped
	}
	return a, skipped
}

// parseReference reads one reference; why says why it is skipped ("" when kept).
func parseReference(raw json.RawMessage, apis []discovery.API) (Reference, string) {
	var f struct {
		Type        *string `json:"type"`
		URL         *string `json:"url"`
		OperationID *string `json:"operation_id"`
		Tool        *string `json:"tool"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			return Reference{}, "a field of the reference has the wrong JSON type, so it is skipped"
		}
		return Reference{}, "the reference is not a JSON object, so it is skipped"
	}
	if f.Type == nil {
		return Reference{}, "the reference has no type, so it is skipped (spec 9.2)"
	}
	ref := Reference{Type: *f.Type}
	if f.URL != nil {
		ref.URL = *f.URL
	}
	switch ref.Type {
	case RefOpenAPI, RefMCP:
	case RefWeb:
		u, err := transport.CheckURL(ref.URL)
		if err != nil || len(ref.URL) > maxRefURL {
			return Reference{}, fmt.Sprintf("the web reference's url %s is not an HTTPS URL Poppydesk can use, so it is skipped (spec 3, 9.2)", quoteShort(ref.URL))
		}
		// The URL is kept as parsed, so the User and the model see the scheme in lower case
		// ("HTTPS://shop.example" is shown as "https://shop.example").
		ref.URL = u.String()
		return ref, ""
	default:
		return Reference{}, fmt.Sprintf("the reference type %s is not one Poppydesk knows, so it is skipped (spec 9.2)", quoteShort(ref.Type))
	}
	name, field := f.OperationID, "operation_id"
	if ref.Type == RefMCP {
		name, field = f.Tool, "tool"
	}
	if name == nil || strings.TrimSpace(*name) == "" || len(*name) > maxRefName || !utf8.ValidString(*name) {
		return Reference{}, fmt.Sprintf("the %s reference needs a %s, so it is skipped (spec 9.2)", ref.Type, field)
	}
	if !listed(apis, ref.Type, ref.URL) {
		return Reference{}, fmt.Sprintf("the %s reference names %s, which is not an %s API listed in poppy.json, so it is ignored (spec 9.2)", ref.Type, quoteShort(ref.URL), ref.Type)
	}
	if ref.Type == RefOpenAPI {
		ref.OperationID = *name
	} else {
		ref.Tool = *name
	}
	return ref, ""
}

// listed reports whether apis has an entry of typ whose url is exactly u (spec 9.2: "url is the
// url of an openapi entry in apis").
func listed(apis []discovery.API, typ, u string) bool {
	return u != "" && slices.ContainsFunc(apis, func(a discovery.API) bool { return a.Type == typ && a.URL == u })
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// cleanText drops control characters other than newline and tab, trims space, and cuts the text
// at max characters (cut reports it).
func cleanText(s string, max int) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	n, cut := 0, false
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			continue
		}
		if n == max {
			cut = true
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String()), cut
}

// quoteShort quotes a Company's value for Poppydesk's words, cut at 120 characters.
func quoteShort(s string) string {
	if utf8.RuneCountInString(s) > 120 {
		s = string([]rune(s)[:120]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Lister lists what the Company's APIs offer, to check references against them (spec 9.2).
// The engine-backed one fetches the OpenAPI description without credentials and lists an MCP
// server's tools in the signed-out Session.
type Lister interface {
	OperationIDs(ctx context.Context, co *discovery.Company, api discovery.API) ([]string, error)
	ToolNames(ctx context.Context, co *discovery.Company, api discovery.API) ([]string, error)
}

// verifier checks references against a Company's descriptions, asking each API once.
type verifier struct {
	l    Lister
	co   *discovery.Company
	seen map[string]listing
}

type listing struct {
	names []string
	err   error
}

func (v *verifier) names(ctx context.Context, ref Reference) ([]string, error) {
	key := ref.Type + " " + ref.URL
	if got, ok := v.seen[key]; ok {
		return got.names, got.err
	}
	api := discovery.API{Type: ref.Type, URL: ref.URL}
	for _, a := range v.co.Channels.APIs {
		if a.Type == ref.Type && a.URL == ref.URL {
			api = a
		}
	}
	var l listing
	if ref.Type == RefOpenAPI {
		l.names, l.err = v.l.OperationIDs(ctx, v.co, api)
	} else {
		l.names, l.err = v.l.ToolNames(ctx, v.co, api)
	}
	v.seen[key] = l
	return l.names, l.err
}

// check returns the alternative with the references its Company's descriptions confirm (nil
// when nothing usable is left) and what it left out.
func (v *verifier) check(ctx context.Context, a *Alternative, where string) (*Alternative, []Skipped) {
	if a == nil {
		return nil, nil
	}
	var skipped []Skipped
	out := &Alternative{Instructions: a.Instructions}
	for _, ref := range a.References {
		at := fmt.Sprintf("%s: the %s reference to %s", where, ref.Type, ref.URL)
		if ref.Type == RefWeb {
			out.References = append(out.References, ref)
			continue
		}
		names, err := v.names(ctx, ref)
		name, what := ref.OperationID, "operationId in the API's OpenAPI description"
		if ref.Type == RefMCP {
			name, what = ref.Tool, "tool the MCP server lists"
		}
		switch {
		case err != nil:
			skipped = append(skipped, Skipped{What: at, Reason: fmt.Sprintf("Poppydesk could not check the %s reference against %s (%v), so it is left out", ref.Type, ref.URL, err)})
		case !slices.Contains(names, name):
			skipped = append(skipped, Skipped{What: at, Reason: fmt.Sprintf("%s is not an %s, so the reference is left out (spec 9.2)", quoteShort(name), what)})
		default:
			out.References = append(out.References, ref)
		}
	}
	if out.Instructions == "" && len(out.References) == 0 {
		skipped = append(skipped, Skipped{What: where, Reason: "no reference of the alternative checked out and it has no instructions, so it is not used (spec 9.2)"})
		return nil, skipped
	}
	return out, skipped
}

package coverage_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

var testAPIs = []discovery.API{
	{Type: "openapi", URL: "https://shop.example/api/openapi.json"},
	{Type: "mcp", URL: "https://shop.example/mcp"},
}

// TestParseAlternative: the rules of spec 9.2 that need no network, one per row.
func TestParseAlternative(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		refs     []string // types kept, in order
		instr    string
		nilAlt   bool
		skipWord string // a word of the Skipped reason, when something is skipped
	}{
		{name: "instructions only", raw: `{"instructions": "Use the app."}`, instr: "Use the app."},
		{name: "web only", raw: `{"references": [{"type": "web", "url": "https://shop.example/close"}]}`, refs: []string{"web"}},
		{name: "neither", raw: `{}`, nilAlt: true, skipWord: "neither"},
		{name: "empty instructions and no reference", raw: `{"instructions": "  ", "references": []}`, nilAlt: true, skipWord: "neither"},
		{name: "not an object", raw: `["web"]`, nilAlt: true, skipWord: "not a JSON object"},
		{name: "unknown type skipped", raw: `{"instructions": "x", "references": [{"type": "company-agent", "url": "https://shop.example/poppy"}]}`, instr: "x", skipWord: "not one Poppydesk knows"},
		{name: "only an unknown type", raw: `{"references": [{"type": "extension", "name": "gift-wrap"}]}`, nilAlt: true, skipWord: "neither"},
		{name: "listed openapi", raw: `{"references": [{"type": "openapi", "url": "https://shop.example/api/openapi.json", "operation_id": "applyGiftCard"}]}`, refs: []string{"openapi"}},
		{name: "unlisted openapi ignored", raw: `{"instructions": "x", "references": [{"type": "openapi", "url": "https://evil.example/openapi.json", "operation_id": "steal"}]}`, instr: "x", skipWord: "not an openapi API listed"},
		{name: "openapi url of the mcp entry", raw: `{"instructions": "x", "references": [{"type": "openapi", "url": "https://shop.example/mcp", "operation_id": "a"}]}`, instr: "x", skipWord: "not an openapi API listed"},
		{name: "openapi without operation_id", raw: `{"instructions": "x", "references": [{"type": "openapi", "url": "https://shop.example/api/openapi.json"}]}`, instr: "x", skipWord: "operation_id"},
		{name: "listed mcp", raw: `{"references": [{"type": "mcp", "url": "https://shop.example/mcp", "tool": "search_products"}]}`, refs: []string{"mcp"}},
		{name: "mcp without tool", raw: `{"instructions": "x", "references": [{"type": "mcp", "url": "https://shop.example/mcp", "operation_id": "a"}]}`, instr: "x", skipWord: "tool"},
		{name: "web over http", raw: `{"instructions": "x", "references": [{"type": "web", "url": "http://shop.example/close"}]}`, instr: "x", skipWord: "HTTPS"},
		{name: "web with an upper-case scheme", raw: `{"references": [{"type": "web", "url": "HTTPS://shop.example/close"}]}`, refs: []string{"web"}},
		{name: "web with a dot-segment", raw: `{"instructions": "x", "references": [{"type": "web", "url": "https://shop.example/a/../oauth/token"}]}`, instr: "x", skipWord: "HTTPS"},
		{name: "reference without type", raw: `{"instructions": "x", "references": [{"url": "https://shop.example/x"}]}`, instr: "x", skipWord: "no type"},
		{name: "references not a list", raw: `{"instructions": "x", "references": {"type": "web"}}`, instr: "x", skipWord: "not a list"},
		{name: "instructions not a string", raw: `{"instructions": 7, "references": [{"type": "web", "url": "https://shop.example/x"}]}`, refs: []string{"web"}, skipWord: "not a string"},
		{name: "control characters dropped", raw: `{"instructions": "a\u0000b\u202ec\nd"}`, instr: "ab\u202ec\nd"},
		{name: "unknown fields ignored", raw: `{"instructions": "x", "later": true, "references": [{"type": "web", "url": "https://shop.example/x", "label": "Close"}]}`, instr: "x", refs: []string{"web"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, skipped := coverage.ParseAlternative(json.RawMessage(tc.raw), testAPIs, "alt")
			if tc.nilAlt {
				if a != nil {
					t.Fatalf("kept %+v", a)
				}
			} else {
				if a == nil {
					t.Fatalf("dropped: %+v", skipped)
				}
				var types []string
				for _, r := range a.References {
					types = append(types, r.Type)
				}
				if strings.Join(types, ",") != strings.Join(tc.refs, ",") || a.Instructions != tc.instr {
					t.Fatalf("kept %+v, want refs %v and instructions %q", a, tc.refs, tc.instr)
				}
				if why := violates92(a, testAPIs); why != "" {
					t.Fatalf("kept an alternative that breaks spec 9.2: %s", why)
				}
			}
			joined := ""
			for _, s := range skipped {
				joined += s.Reason + "; "
			}
			if tc.skipWord != "" && !strings.Contains(joined, tc.skipWord) {
				t.Fatalf("skipped = %q, want a reason with %q", joined, tc.skipWord)
			}
			if tc.skipWord == "" && len(skipped) > 0 {
				t.Fatalf("skipped %q, want nothing skipped", joined)
			}
		})
	}
}

// violates92 is the oracle of spec 9.2: what is wrong with a kept alternative ("" when nothing).
func violates92(a *coverage.Alternative, apis []discovery.API) string {
	if a.Instructions == "" && len(a.References) == 0 {
		return "neither instructions nor references"
	}
	if len(a.References) > coverage.MaxReferences {
		return "too many references"
	}
	for _, r := range a.References {
		switch r.Type {
		case coverage.RefWeb:
			if !strings.HasPrefix(r.URL, "https://") {
				return "a web reference that is not HTTPS: " + r.URL
			}
		case coverage.RefOpenAPI, coverage.RefMCP:
			listed := false
			for _, x := range apis {
				listed = listed || x.Type == r.Type && x.URL == r.URL
			}
			if !listed {
				return "a " + r.Type + " reference to an unlisted API: " + r.URL
			}
			if r.Type == coverage.RefOpenAPI && r.OperationID == "" || r.Type == coverage.RefMCP && r.Tool == "" {
				return "an " + r.Type + " reference without its operation or tool"
			}
		default:
			return "a reference of unknown type " + r.Type
		}
	}
	return ""
}

// TestParseExcludedTasks: the document's rules (spec 9.1): a tasks list is required, entries
// need a phrase, unknown fields are ignored, duplicates and bad entries are left out.
func TestParseExcludedTasks(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		tasks   []string
		invalid bool
		skipped int
	}{
		{name: "the spec's example", body: `{"tasks": [{"task": "Send a wire transfer", "alternative": {"instructions": "Only in the app.", "references": [{"type": "web", "url": "https://example.com/transfers/wire"}]}}, {"task": "Close an account"}]}`,
			tasks: []string{"Send a wire transfer", "Close an account"}},
		{name: "empty list", body: `{"tasks": []}`, tasks: []string{}},
		{name: "no tasks", body: `{"excluded": []}`, invalid: true},
		{name: "tasks null", body: `{"tasks": null}`, invalid: true},
		{name: "not an object", body: `[{"task": "x"}]`, invalid: true},
		{name: "HTML", body: `<!doctype html><title>Shop</title>`, invalid: true},
		{name: "trailing data", body: `{"tasks": []} {}`, invalid: true},
		{name: "entry without task", body: `{"tasks": [{"alternative": {"instructions": "x"}}, {"task": "Close an account"}]}`, tasks: []string{"Close an account"}, skipped: 1},
		{name: "task not a string", body: `{"tasks": [{"task": 3}]}`, tasks: []string{}, skipped: 1},
		{name: "duplicate task", body: `{"tasks": [{"task": "Close an account"}, {"task": "close an  account."}]}`, tasks: []string{"Close an account"}, skipped: 1},
		{name: "unknown fields", body: `{"version": 2, "tasks": [{"task": "Close an account", "since": "2025"}]}`, tasks: []string{"Close an account"}},
		{name: "unusable alternative dropped, task kept", body: `{"tasks": [{"task": "Buy a gift card", "alternative": {"references": [{"type": "openapi", "url": "https://evil.example/o.json", "operation_id": "x"}]}}]}`,
			tasks: []string{"Buy a gift card"}, skipped: 2},
		{name: "phrase too long", body: `{"tasks": [{"task": "` + strings.Repeat("a", coverage.MaxTaskPhrase+1) + `"}]}`, tasks: []string{}, skipped: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := coverage.ParseExcludedTasks([]byte(tc.body), testAPIs)
			if tc.invalid {
				var ce *coverage.Error
				if !errors.As(err, &ce) || ce.Code != coverage.CodeInvalidDocument {
					t.Fatalf("err = %v, want CodeInvalidDocument", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tk := range x.Tasks {
				got = append(got, tk.Task)
			}
			if strings.Join(got, "|") != strings.Join(tc.tasks, "|") || len(x.Skipped) != tc.skipped {
				t.Fatalf("tasks %q skipped %+v; want %q and %d skipped", got, x.Skipped, tc.tasks, tc.skipped)
			}
		})
	}
}

func TestTaskKey(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"Close an account", "close an account."},
		{"  Pay with a gift card!", "pay   with a gift card"},
		{"Move a flight to the next day", "MOVE A FLIGHT TO THE NEXT DAY?"},
	} {
		if coverage.TaskKey(tc.a) != coverage.TaskKey(tc.b) {
			t.Errorf("TaskKey(%q) = %q, TaskKey(%q) = %q; want the same", tc.a, coverage.TaskKey(tc.a), tc.b, coverage.TaskKey(tc.b))
		}
	}
	if coverage.TaskKey("Close an account") == coverage.TaskKey("Open an account") {
		t.Error("different tasks have the same key")
	}
}

// TestParseSkillIndex: the index is used only with the 0.2.0 $schema; unknown fields are
// ignored, unknown types and incomplete entries skipped; urls resolve against the final
// poppy.json URL (RFC 3986 §5) and must then be HTTPS (spec 9.4).
func TestParseSkillIndex(t *testing.T) {
	const base = "https://shop.example/.well-known/poppy.json"
	d := "sha256:" + strings.Repeat("ab", 32)
	entry := func(fields string) string {
		return `{"$schema": "` + coverage.SkillIndexSchema + `", "skills": [` + fields + `]}`
	}
	tests := []struct {
		name    string
		raw     string
		ignored bool
		url     string // the resolved url of the one skill kept ("" when none is)
		skip    string
	}{
		{name: "absent", raw: ``, ignored: true},
		{name: "no $schema", raw: `{"skills": []}`, ignored: true},
		{name: "unknown $schema", raw: `{"$schema": "https://schemas.agentskills.io/discovery/0.1.0/schema.json", "skills": []}`, ignored: true},
		{name: "schema with a trailing slash", raw: `{"$schema": "` + coverage.SkillIndexSchema + `/", "skills": []}`, ignored: true},
		{name: "relative url", raw: entry(`{"name": "a", "description": "d", "type": "skill-md", "url": "skills/a/SKILL.md", "digest": "` + d + `"}`),
			url: "https://shop.example/.well-known/skills/a/SKILL.md"},
		{name: "origin-relative url", raw: entry(`{"name": "a", "description": "d", "type": "archive", "url": "/skills/a.tar.gz", "digest": "` + d + `"}`),
			url: "https://shop.example/skills/a.tar.gz"},
		{name: "url on another domain", raw: entry(`{"name": "a", "description": "d", "type": "skill-md", "url": "https://cdn.example/s/SKILL.md", "digest": "` + d + `"}`),
			url: "https://cdn.example/s/SKILL.md"},
		{name: "dot segments resolved", raw: entry(`{"name": "a", "description": "d", "type": "skill-md", "url": "../skills/a/SKILL.md", "digest": "` + d + `"}`),
			url: "https://shop.example/skills/a/SKILL.md"},
		{name: "unknown fields ignored", raw: entry(`{"name": "a", "description": "d", "type": "skill-md", "url": "x.md", "digest": "` + d + `", "license": "MIT"}`),
			url: "https://shop.example/.well-known/x.md"},
		{name: "unknown type skipped", raw: entry(`{"name": "a", "description": "d", "type": "mcp-bundle", "url": "x", "digest": "` + d + `"}`), skip: "not one Poppydesk knows"},
		{name: "http url skipped", raw: entry(`{"name": "a", "description": "d", "type": "skill-md", "url": "http://shop.example/x.md", "digest": "` + d + `"}`), skip: "HTTPS"},
		{name: "scheme-relative to http? no: network-path", raw: entry(`{"name": "a", "description": "d", "type": "skill-md", "url": "//cdn.example/x.md", "digest": "` + d + `"}`),
			url: "https://cdn.example/x.md"},
		{name: "upper-case digest skipped", raw: entry(`{"name": "a", "description": "d", "type": "skill-md", "url": "x.md", "digest": "sha256:` + strings.Repeat("AB", 32) + `"}`), skip: "digest"},
		{name: "sha512 digest skipped", raw: entry(`{"name": "a", "description": "d", "type": "skill-md", "url": "x.md", "digest": "sha512:` + strings.Repeat("ab", 32) + `"}`), skip: "digest"},
		{name: "missing description", raw: entry(`{"name": "a", "type": "skill-md", "url": "x.md", "digest": "` + d + `"}`), skip: "description"},
		{name: "name not of the format", raw: entry(`{"name": "../A", "description": "d", "type": "skill-md", "url": "x.md", "digest": "` + d + `"}`), skip: "name"},
		{name: "entry not an object", raw: entry(`"a"`), skip: "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := coverage.ParseSkillIndex(json.RawMessage(tc.raw), base)
			if (x.Ignored != "") != tc.ignored {
				t.Fatalf("Ignored = %q, want ignored %v", x.Ignored, tc.ignored)
			}
			if tc.url != "" && (len(x.Skills) != 1 || x.Skills[0].URL != tc.url) {
				t.Fatalf("skills = %+v (skipped %+v), want one at %s", x.Skills, x.Skipped, tc.url)
			}
			if tc.skip != "" && (len(x.Skills) != 0 || len(x.Skipped) != 1 || !strings.Contains(x.Skipped[0].Reason, tc.skip)) {
				t.Fatalf("skills %+v skipped %+v; want it skipped for %q", x.Skills, x.Skipped, tc.skip)
			}
		})
	}
}

// TestScrub: what a report must not carry is removed (spec 9.3, 10.2), and nothing else.
func TestScrub(t *testing.T) {
	jwt := "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlc2lnbmF0dXJl"
	tests := []struct {
		name, in, want string
		removed        []string
	}{
		{name: "nothing to remove", in: "The checkout page has no gift card field.", want: "The checkout page has no gift card field."},
		{name: "identifier", in: "Exchange item itm_4Qa of order ord_7Hk2.", want: "Exchange item [identifier removed] of order [identifier removed].", removed: []string{coverage.RemovedIdentifier}},
		{name: "identifier only as a whole word", in: "ord_7Hk2x and xord_7Hk2 stay", want: "ord_7Hk2x and xord_7Hk2 stay"},
		{name: "account label, any case", in: "Signed in as Alice.Smith today", want: "Signed in as [account removed] today", removed: []string{coverage.RemovedAccount}},
		{name: "email", in: "Write to jane.doe+shop@mail.example.org please", want: "Write to [email removed] please", removed: []string{coverage.RemovedEmail}},
		{name: "phone", in: "Call +1 (415) 555-0100 or 030 1234567.", want: "Call [phone number removed] or [phone number removed].", removed: []string{coverage.RemovedPhone}},
		{name: "dates and prices stay", in: "Delivered 2025-01-02 for 129.00, size 42", want: "Delivered 2025-01-02 for 129.00, size 42"},
		{name: "JWT", in: "The header was " + jwt, want: "The header was [redacted]", removed: []string{coverage.RemovedSecret}},
		{name: "secret-named value", in: "it answered access_token=abc123secret", want: "it answered access_token=[redacted]", removed: []string{coverage.RemovedSecret}},
		{name: "a token Poppydesk holds, anywhere", in: "the page showed at_Z9secretTOKENvalue and xat_Z9secretTOKENvaluex", want: "the page showed [redacted] and x[redacted]x", removed: []string{coverage.RemovedSecret}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, removed := coverage.Scrub(tc.in, []string{"at_Z9secretTOKENvalue"}, []string{"ord_7Hk2", "itm_4Qa"}, []string{"alice.smith"})
			if got != tc.want || strings.Join(removed, ",") != strings.Join(tc.removed, ",") {
				t.Fatalf("Scrub = %q %v, want %q %v", got, removed, tc.want, tc.removed)
			}
		})
	}
}

// TestIdentifiersIn: the values under identifier keys and identifier-shaped words are found in
// JSON, event streams and text; ordinary words and masked secrets are not.
func TestIdentifiersIn(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
		not        []string
	}{
		{name: "JSON keys", body: `{"orders": [{"id": "ord_7Hk2", "status": "delivered", "items": [{"item_id": "itm_4Qa", "sku": "stormline-m"}]}], "orderNumber": 100234}`,
			want: []string{"ord_7Hk2", "itm_4Qa", "100234"}, not: []string{"delivered", "stormline-m"}},
		{name: "words in text values", body: `{"text": "Your order ord_9Zt1 ships tomorrow."}`, want: []string{"ord_9Zt1"}, not: []string{"ships"}},
		{name: "event stream", body: "event: message\ndata: {\"conversation_id\": \"c_81Kq\"}\n\n", want: []string{"c_81Kq"}},
		{name: "plain text", body: "Reference INV-20931 is paid", want: []string{"INV-20931"}},
		{name: "masked values", body: `{"id": "[redacted]"}`, not: []string{"[redacted]"}},
		{name: "error codes", body: `{"error": "approval_required"}`, not: []string{"approval_required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(coverage.IdentifiersIn([]byte(tc.body)), " ")
			for _, w := range tc.want {
				if !strings.Contains(" "+got+" ", " "+w+" ") {
					t.Errorf("IdentifiersIn = %q, want %q in it", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(" "+got+" ", " "+n+" ") {
					t.Errorf("IdentifiersIn = %q, must not hold %q", got, n)
				}
			}
		})
	}
}

// TestSeenIsBounded: Seen keeps at most its bound per Company, dropping the oldest.
func TestSeenIsBounded(t *testing.T) {
	s := coverage.NewSeen(3)
	s.Add("https://a.example", "v1", "v2", "v3", "v4", "v2")
	if got := strings.Join(s.Values("https://a.example"), ","); got != "v2,v3,v4" {
		t.Fatalf("Values = %s, want v2,v3,v4", got)
	}
	if len(s.Values("https://b.example")) != 0 {
		t.Fatal("another Company's values leaked")
	}
	// By bytes: filled with values of 100 bytes past SeenBytesPerCompany, it keeps the newest
	// that fit.
	s = coverage.NewSeen(1 << 20)
	const n = 2 * coverage.SeenBytesPerCompany / 100
	for i := range n {
		s.Add("https://a.example", fmt.Sprintf("%0100d", i))
	}
	vals, total := s.Values("https://a.example"), 0
	for _, v := range vals {
		total += len(v)
	}
	if total > coverage.SeenBytesPerCompany || len(vals) != coverage.SeenBytesPerCompany/100 || vals[len(vals)-1] != fmt.Sprintf("%0100d", n-1) {
		t.Fatalf("%d values of %d bytes kept (the newest %q...), want the newest %d within %d bytes", len(vals), total, vals[len(vals)-1][:8], coverage.SeenBytesPerCompany/100, coverage.SeenBytesPerCompany)
	}
}

// TestSeenKeepsOnlyItsBytes: identifiers found as words of long response bodies are kept without
// the bodies: the heap Seen holds stays near its byte bound, not the bodies' size.
func TestSeenKeepsOnlyItsBytes(t *testing.T) {
	const bodies, size = 400, 32 << 10 // 12.5 MiB of bodies
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	s := coverage.NewSeen(0)
	filler := strings.Repeat("lorem ipsum ", size/12)
	for i := range bodies {
		body := fmt.Sprintf(`{"note":"%s order ord_%d9x %s"}`, filler, i, filler)
		s.Add("https://a.example", coverage.IdentifiersIn([]byte(body))...)
	}
	kept := heap() - before
	if n := len(s.Values("https://a.example")); n != bodies {
		t.Fatalf("%d identifiers kept, want %d", n, bodies)
	}
	if limit := int64(4 * coverage.SeenBytesPerCompany); kept > limit {
		t.Fatalf("Seen holds %d KiB of heap for %d short identifiers; want at most %d KiB (the bodies are not kept)", kept>>10, bodies, limit>>10)
	}
	runtime.KeepAlive(s)
}

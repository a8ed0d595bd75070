package coverage_test

import (
	"archive/tar"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// FuzzExcludedTasks: whatever a Company serves as its excluded tasks, what Poppydesk keeps obeys
// spec 9.1 and 9.2: every task has a phrase within the bound, no two have the same key, and
// every alternative kept has instructions or a reference, each reference of a known type, an
// openapi or mcp one naming a listed API of its type with its operation or tool, a web one an
// HTTPS URL.
func FuzzExcludedTasks(f *testing.F) {
	for _, s := range []string{
		`{"tasks": [{"task": "Send a wire transfer", "alternative": {"instructions": "In the app.", "references": [{"type": "web", "url": "https://example.com/transfers/wire"}]}}, {"task": "Close an account"}]}`,
		`{"tasks": [{"task": "Pay with a gift card", "alternative": {"references": [{"type": "openapi", "url": "https://shop.example/api/openapi.json", "operation_id": "applyGiftCard"}, {"type": "mcp", "url": "https://shop.example/mcp", "tool": "t"}, {"type": "openapi", "url": "https://evil.example/o.json", "operation_id": "x"}, {"type": "later"}]}}]}`,
		`{"tasks": [{"task": "a"}, {"task": "A."}, {"task": ""}, {"task": 1}, 7, {"task": "b", "alternative": "x"}]}`,
		`{"tasks": null}`, `[]`, `{"tasks": [{"task": "x", "alternative": {"instructions": "\u0000\u202e", "references": {"type": "web"}}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		x, err := coverage.ParseExcludedTasks(body, testAPIs)
		if err != nil {
			if x != nil {
				t.Fatal("an error with a document")
			}
			return
		}
		if len(x.Tasks) > coverage.MaxExcludedTasks {
			t.Fatalf("%d tasks kept", len(x.Tasks))
		}
		keys := map[string]bool{}
		for _, tk := range x.Tasks {
			if tk.Task == "" || utf8.RuneCountInString(tk.Task) > coverage.MaxTaskPhrase || !utf8.ValidString(tk.Task) || strings.ContainsFunc(tk.Task, unicode.IsControl) {
				t.Fatalf("a task phrase breaks the rules: %q", tk.Task)
			}
			if keys[coverage.TaskKey(tk.Task)] {
				t.Fatalf("two tasks with the key %q", coverage.TaskKey(tk.Task))
			}
			keys[coverage.TaskKey(tk.Task)] = true
			if tk.Alternative != nil {
				if why := violates92(tk.Alternative, testAPIs); why != "" {
					t.Fatalf("task %q: %s", tk.Task, why)
				}
				if _, found := x.Lists(tk.Task); !found {
					t.Fatalf("Lists does not find %q", tk.Task)
				}
			}
		}
	})
}

// FuzzAlternative: every alternative ParseAlternative keeps satisfies the rules of spec 9.2,
// and its instructions are bounded text.
func FuzzAlternative(f *testing.F) {
	for _, s := range []string{
		`{"instructions": "Gift cards are applied with the payment API.", "references": [{"type": "openapi", "url": "https://shop.example/api/openapi.json", "operation_id": "applyGiftCard"}, {"type": "web", "url": "https://example.com/checkout"}]}`,
		`{"references": [{"type": "web", "url": "http://example.com"}, {"type": "mcp", "url": "https://shop.example/mcp"}, {"type": "openapi", "url": "https://shop.example/mcp", "operation_id": "x"}]}`,
		`{"references": [{"type": "web", "url": "https://shop.example/a/%2e%2e/b"}, {"type": null}, {"type": "web", "url": 3}]}`,
		`{}`, `null`, `"text"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, _ := coverage.ParseAlternative(json.RawMessage(raw), testAPIs, "alt")
		if a == nil {
			return
		}
		if why := violates92(a, testAPIs); why != "" {
			t.Fatal(why)
		}
		for _, r := range a.References {
			if r.Type == coverage.RefWeb {
				if _, err := transport.CheckURL(r.URL); err != nil {
					t.Fatalf("a web reference Poppydesk could not use: %v", err)
				}
			}
		}
		if utf8.RuneCountInString(a.Instructions) > coverage.MaxInstructions || strings.ContainsFunc(a.Instructions, func(r rune) bool {
			return unicode.IsControl(r) && r != '\n' && r != '\t'
		}) {
			t.Fatalf("instructions not cleaned: %q", a.Instructions)
		}
	})
}

var nameRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

// FuzzSkillIndex: an index is used only with the 0.2.0 $schema, and every skill kept has the
// fields spec 9.4 requires: a name of the Agent Skills format (unique), a known type, a sha256
// digest of 64 lower-case hex characters, and a url that resolved to an HTTPS URL the transport
// accepts.
func FuzzSkillIndex(f *testing.F) {
	d := "sha256:" + strings.Repeat("0f", 32)
	for _, s := range []string{
		`{"$schema": "` + coverage.SkillIndexSchema + `", "skills": [{"name": "a", "description": "d", "type": "skill-md", "url": "skills/a/SKILL.md", "digest": "` + d + `"}, {"name": "b", "description": "d", "type": "archive", "url": "//cdn.example/b.zip", "digest": "` + d + `"}]}`,
		`{"$schema": "` + coverage.SkillIndexSchema + `", "skills": [{"name": "a", "description": "d", "type": "x", "url": "http://a", "digest": "sha256:00"}, {"name": "a", "description": "d", "type": "skill-md", "url": "javascript:alert(1)", "digest": "` + d + `"}]}`,
		`{"skills": []}`, `{"$schema": 1}`, `[]`,
	} {
		f.Add([]byte(s), "https://shop.example/.well-known/poppy.json")
	}
	f.Add([]byte(`{"$schema": "`+coverage.SkillIndexSchema+`", "skills": [{"name": "a", "description": "d", "type": "skill-md", "url": "a", "digest": "`+d+`"}]}`), "http://shop.example/.well-known/poppy.json")
	f.Fuzz(func(t *testing.T, raw []byte, base string) {
		x := coverage.ParseSkillIndex(json.RawMessage(raw), base)
		if x.Ignored != "" {
			if len(x.Skills) != 0 {
				t.Fatal("an ignored index with skills")
			}
			return
		}
		var schema struct {
			Schema string `json:"$schema"`
		}
		if json.Unmarshal(raw, &schema) != nil || schema.Schema != coverage.SkillIndexSchema {
			t.Fatalf("an index with $schema %q was used", schema.Schema)
		}
		names := map[string]bool{}
		for _, s := range x.Skills {
			if !nameRE.MatchString(s.Name) || names[s.Name] {
				t.Fatalf("skill name %q", s.Name)
			}
			names[s.Name] = true
			if s.Type != coverage.SkillMD && s.Type != coverage.SkillArchive {
				t.Fatalf("skill type %q", s.Type)
			}
			if len(s.Digest) != 71 || !strings.HasPrefix(s.Digest, "sha256:") || strings.Trim(s.Digest[7:], "0123456789abcdef") != "" {
				t.Fatalf("digest %q", s.Digest)
			}
			if u, err := transport.CheckURL(s.URL); err != nil || u.Scheme != "https" {
				t.Fatalf("url %q: %v", s.URL, err)
			}
			if s.Description == "" || utf8.RuneCountInString(s.Description) > coverage.MaxSkillDescription {
				t.Fatalf("description %q", s.Description)
			}
		}
	})
}

// FuzzExtract: whatever archive a Company publishes, an extraction that succeeds has every path
// inside the skill's folder, SKILL.md at its root, and stays within the limits.
func FuzzExtract(f *testing.F) {
	lim := coverage.Limits{MaxFiles: 16, MaxEntries: 32, MaxFile: 4 << 10, MaxTotal: 16 << 10}
	for _, entries := range [][]entry{
		{skill, {name: "references/a.md", body: "a"}, {name: "./scripts/x.sh", body: "#!/bin/sh", mode: 0o755}},
		{skill, {name: "../x", body: "x"}},
		{skill, {name: "l", typeflag: tar.TypeSymlink, link: "../../etc"}},
		{skill, {name: "a/", typeflag: tar.TypeDir}, {name: "a/b", body: "b"}},
	} {
		f.Add(tarGz(f, entries...))
		f.Add(zipOf(f, entries...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := coverage.Extract(data, lim)
		if err != nil {
			if files != nil {
				t.Fatal("files with an error")
			}
			return
		}
		if why := outsideFolder(files, lim); why != "" {
			t.Fatal(why)
		}
	})
}

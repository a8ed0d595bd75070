package conformance_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/conformance"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

// tableRow is a row of a markdown table, its cells unescaped.
type tableRow []string

// markdownTables reads the tables of a markdown document, in order, without their header
// and separator rows.
func markdownTables(doc string) [][]tableRow {
	var tables [][]tableRow
	var cur []tableRow
	header := 0
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "|") {
			if cur != nil {
				tables = append(tables, cur)
			}
			cur, header = nil, 0
			continue
		}
		if header < 2 { // the header row and the separator
			header++
			cur = []tableRow{}
			continue
		}
		cells := regexp.MustCompile(`[^\\]\|`).Split(" "+strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")+" ", -1)
		var row tableRow
		for _, c := range cells {
			row = append(row, strings.ReplaceAll(strings.TrimSpace(c), `\|`, "|"))
		}
		cur = append(cur, row)
	}
	if cur != nil {
		tables = append(tables, cur)
	}
	return tables
}

var ruleRef = regexp.MustCompile("`([a-z]+\\.[a-z-]+)`")

// TestConformanceTable keeps docs/CONFORMANCE.md and check's rules in step: every MUST rule
// check reports probes a listed requirement, every rule the table names is one check reports,
// the SHOULD and NOTE rules are listed with their level and section, every requirement names
// its rules or why it has none, and the counts are the table's. When the specification's text
// is at hand ($POPPY_SPEC_DIR, or shared/spec beside the repository), every quoted requirement
// must be in it, word for word.
func TestConformanceTable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "CONFORMANCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	tables := markdownTables(doc)
	if len(tables) != 2 {
		t.Fatalf("docs/CONFORMANCE.md has %d tables, want 2 (the MUSTs, the SHOULDs and NOTEs)", len(tables))
	}
	musts, others := tables[0], tables[1]
	named := map[string]bool{}
	probed, unobservable, notYet := 0, 0, 0
	for i, row := range musts {
		if len(row) != 4 {
			t.Fatalf("row %d of the MUST table has %d cells: %q", i+1, len(row), row)
		}
		refs := ruleRef.FindAllStringSubmatch(row[2], -1)
		switch {
		case len(refs) > 0:
			probed++
		case row[3] == "":
			t.Errorf("%s %q names no rule and says no reason", row[0], row[1])
		case strings.HasPrefix(row[3], "Not probed yet: "):
			notYet++
		default:
			unobservable++
		}
		for _, m := range refs {
			named[m[1]] = true
			if !slices.Contains(conformance.Rules(), m[1]) {
				t.Errorf("%s %q names %s, which is no rule check reports", row[0], row[1], m[1])
			}
		}
	}
	for _, id := range conformance.Rules() {
		r, _ := inspect.RuleByID(id)
		if r.Level == inspect.MUST && !named[id] {
			t.Errorf("check's MUST rule %s probes no requirement of the table", id)
		}
	}
	listed := map[string]bool{}
	for _, row := range others {
		m := ruleRef.FindStringSubmatch(row[0])
		if len(row) != 3 || m == nil {
			t.Fatalf("a row of the SHOULD and NOTE table: %q", row)
		}
		r, ok := inspect.RuleByID(m[1])
		switch {
		case !ok || !slices.Contains(conformance.Rules(), m[1]):
			t.Errorf("the SHOULD and NOTE table names %s, which is no rule check reports", m[1])
		case r.Level == inspect.MUST || string(r.Level) != row[1] || r.Section != row[2]:
			t.Errorf("the SHOULD and NOTE table has %s as %s, %s; the catalog says %s, %s", m[1], row[1], row[2], r.Level, r.Section)
		}
		listed[m[1]] = true
	}
	for _, id := range conformance.Rules() {
		if r, _ := inspect.RuleByID(id); r.Level != inspect.MUST && !listed[id] {
			t.Errorf("check's %s rule %s is not in the SHOULD and NOTE table", r.Level, id)
		}
	}
	counts := fmt.Sprintf("Counts: %d requirements listed; %d probed; %d not observable from outside; %d observable and not\nprobed yet.", len(musts), probed, unobservable, notYet)
	if !strings.Contains(doc, counts) {
		t.Errorf("the counts are not the table's; want:\n%s", counts)
	}
	t.Logf("%d Company-side requirements: %d probed, %d not observable from outside, %d not probed yet", len(musts), probed, unobservable, notYet)

	t.Run("quotes", func(t *testing.T) {
		spec := specText(t)
		for _, row := range musts {
			if !strings.Contains(spec, strings.Join(strings.Fields(row[1]), " ")) {
				t.Errorf("%s: the specification has no sentence %q", row[0], row[1])
			}
		}
	})
}

// specText is the text of the specification and the Operations extension, whitespace folded.
func specText(t *testing.T) string {
	dirs := []string{os.Getenv("POPPY_SPEC_DIR"), filepath.Join("..", "..", "..", "shared", "spec"), "/work/shared/spec"}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		a, err1 := os.ReadFile(filepath.Join(d, "poppy-0.4.md"))
		b, err2 := os.ReadFile(filepath.Join(d, "operations-extension-v2.md"))
		if err1 == nil && err2 == nil {
			return strings.Join(strings.Fields(string(a)+"\n"+string(b)), " ")
		}
	}
	t.Skip("the specification's text is not at hand: set POPPY_SPEC_DIR to the folder of poppy-0.4.md and operations-extension-v2.md")
	return ""
}

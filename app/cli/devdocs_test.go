package cli

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docCommands are the `poppydesk ...` commands a document gives: each inline code span and each
// fenced block (continued lines joined) from the word poppydesk on, as words.
func docCommands(doc string) [][]string {
	var spans []string
	for _, block := range regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		spans = append(spans, strings.ReplaceAll(block[1], "\\\n", " "))
	}
	doc = regexp.MustCompile("(?s)```.*?```").ReplaceAllString(doc, "")
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(doc, -1) {
		spans = append(spans, strings.Join(strings.Fields(m[1]), " "))
	}
	var out [][]string
	for _, s := range spans {
		for _, line := range strings.Split(s, "\n") {
			if i := strings.Index(line, "poppydesk "); i >= 0 {
				out = append(out, strings.Fields(line[i:]))
			}
		}
	}
	return out
}

// TestDevelopersDocCommands: every command docs/DEVELOPERS.md gives a Company developer names a
// subcommand that exists and only flags that subcommand accepts (its --help lists them), so the
// document cannot drift from the command line.
func TestDevelopersDocCommands(t *testing.T) {
	raw, err := os.ReadFile("../../docs/DEVELOPERS.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := docCommands(string(raw))
	if len(cmds) < 5 {
		t.Fatalf("found only %d commands in DEVELOPERS.md: %v", len(cmds), cmds)
	}
	helps := map[string]string{}
	for _, c := range cmds {
		sub := c[1:2]
		if len(c) > 2 && slices.Contains([]string{"company", "operator"}, c[1]) {
			sub = c[1:3]
		}
		name := strings.Join(sub, " ")
		help, ok := helps[name]
		if !ok {
			var b bytes.Buffer
			env := testEnv(t.TempDir())
			env.Stdout, env.Stderr = &b, &b
			if code := Run(context.Background(), append(slices.Clone(sub), "--help"), env); code != 0 || !strings.Contains(b.String(), "Usage: poppydesk "+name) {
				t.Errorf("DEVELOPERS.md gives `%s`, but `poppydesk %s --help` exits %d:\n%s", strings.Join(c, " "), name, code, b.String())
				continue
			}
			help, helps[name] = b.String(), b.String()
		}
		for _, w := range c {
			if !strings.HasPrefix(w, "--") {
				continue
			}
			flag, _, _ := strings.Cut(strings.Trim(w, ".,;:)"), "=")
			if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(flag[1:]) + `(\s|$)`).MatchString(help) {
				t.Errorf("DEVELOPERS.md gives `%s`, but poppydesk %s has no %s flag", strings.Join(c, " "), name, flag)
			}
		}
	}
	t.Logf("%d commands checked against %d subcommands' flags", len(cmds), len(helps))
}

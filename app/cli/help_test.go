package cli

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestFlagPlaceholders: every flag that takes a value names it with a placeholder from its usage
// (a back-quoted word, as flag.PrintDefaults reads it), so `--help` shows `--socket path`, never
// a Go type name such as `--socket string` or `--wait duration`.
func TestFlagPlaceholders(t *testing.T) {
	typeNames := map[string]bool{"string": true, "duration": true, "value": true, "int": true, "uint": true, "float": true, "int64": true, "uint64": true}
	env := testEnv(t.TempDir())
	n := 0
	for _, c := range commands() {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.register(fs, &env)
		fs.VisitAll(func(f *flag.Flag) {
			n++
			name, usage := flag.UnquoteUsage(f)
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				if name != "" {
					t.Errorf("poppydesk %s --%s is a switch but its usage names a value %q", c.name, f.Name, name)
				}
				return
			}
			if name == "" || typeNames[name] {
				t.Errorf("poppydesk %s --%s shows the placeholder %q; put the value's name in back quotes in its usage (%q)", c.name, f.Name, name, usage)
			}
		})
		// The printed help has the placeholder, once, and no leftover back quote around it.
		code, out, _ := runCLI(t, env, c.name, "--help")
		if code != 0 {
			t.Fatalf("%s --help exited %d", c.name, code)
		}
		for _, tn := range []string{" string\n", " duration\n", " value\n"} {
			if strings.Contains(out, tn) {
				t.Errorf("poppydesk %s --help shows a type name as a placeholder:\n%s", c.name, out)
			}
		}
	}
	if n == 0 {
		t.Fatal("no flags were checked")
	}
}

package cli

import (
	"bytes"
	"flag"
	"os/exec"
	"strings"
	"testing"
)

// TestManPageCoversTheCommandLine: every listed subcommand and every one of its flags is in
// poppydesk(1), the date follows SOURCE_DATE_EPOCH, and groff reads the page without a warning.
func TestManPageCoversTheCommandLine(t *testing.T) {
	env := setupEnv(t.TempDir(), "linux", "", map[string]string{"SOURCE_DATE_EPOCH": "1767225600"})
	env.Version = "1.2.3-test"
	code, page, errOut := runCLI(t, env, "man")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(page, `.TH POPPYDESK 1 "2026-01-01" "poppydesk 1.2.3\-test" "User Commands"`) {
		t.Errorf("header: %q", strings.SplitN(page, "\n", 2)[0])
	}
	for _, c := range commands() {
		if c.hidden {
			if c.name != "window" && strings.Contains(page, `.SS "poppydesk `+c.name+` `) {
				t.Errorf("hidden command %s is in the page", c.name)
			}
			continue
		}
		if !strings.Contains(page, `.SS "poppydesk `+roffEscape(c.name)) {
			t.Errorf("the page has no section for %s", c.name)
		}
		if !strings.Contains(page, roffText(c.summary)) {
			t.Errorf("the page lacks the summary of %s", c.name)
		}
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.register(fs, &Env{})
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(page, `\fB\-\-`+roffEscape(f.Name)+`\fR`) {
				t.Errorf("the page lacks %s --%s", c.name, f.Name)
			}
		})
	}
	for _, s := range []string{"poppydesk mcp setup \\-\\-list", ".SH EXIT STATUS", ".SH MODEL INTERFACE", "poppydesk\\-mcp", "/tmp/poppydesk\\-UID/mcp\\-HOMEKEY.sock", "\\-32700"} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	if code, _, errOut := runCLI(t, setupEnv(t.TempDir(), "linux", "", map[string]string{"SOURCE_DATE_EPOCH": "soon"}), "man"); code != 1 || !strings.Contains(errOut, "not a Unix time") {
		t.Errorf("a bad SOURCE_DATE_EPOCH: exit %d, %q", code, errOut)
	}

	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed (Debian's groff-base, which man-db needs); the page's syntax is not checked")
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("groff -ww: %v\n%s", err, stderr.String())
	}
}

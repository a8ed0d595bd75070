package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindsWhatOnlyOnePlatformBreaks runs the checker on a module whose code is right on Linux
// but breaks for one other platform each way cross-vet must catch: a name missing on macOS (a
// type error in a _darwin.go file) and a vet finding in a Windows-only test file.
func TestFindsWhatOnlyOnePlatformBreaks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.24\n")
	write("m.go", "package m\n\nfunc Open() string { return name }\n")
	write("m_linux.go", "package m\n\nconst name = \"linux\"\n")
	write("m_windows.go", "package m\n\nconst name = \"windows\"\n")
	write("m_darwin.go", "package m\n\nconst nmae = \"darwin\"\n")
	write("m_windows_test.go", "package m\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\nfunc TestOpen(t *testing.T) { fmt.Printf(\"%d\\n\", Open()) }\n")

	cases := []struct {
		goos string
		want []string // each printed problem must hold one of these, in order
	}{
		{"linux", nil},
		{"darwin", []string{"m.go:3:29: undefined: name"}},
		{"windows", []string{"m_windows_test.go:8:43: fmt.Printf format %d has arg Open() of wrong type string (printf)"}},
	}
	for _, c := range cases {
		t.Run(c.goos, func(t *testing.T) {
			var out bytes.Buffer
			env := append(os.Environ(), "GOOS="+c.goos, "GOARCH=amd64")
			n, err := run(dir, env, []string{"./..."}, &out)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			var problems []string
			for _, l := range lines {
				if !strings.HasPrefix(l, "typecheck: ") {
					problems = append(problems, l)
				}
			}
			if n != len(c.want) || len(problems) != len(c.want) {
				t.Fatalf("%d problems for %s, want %d:\n%s", n, c.goos, len(c.want), out.String())
			}
			for i, w := range c.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %d = %q, want it to hold %q", i, problems[i], w)
				}
			}
		})
	}
}

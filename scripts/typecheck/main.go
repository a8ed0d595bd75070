// Command typecheck type-checks every package of the module, tests included, for another platform
// from source, and runs go vet's analyzers over them, without compiling:
//
//	GOOS=darwin GOARCH=arm64 go run ./scripts/typecheck ./...
//
// It is what scripts/cross-vet.sh runs for the platforms CI does not build a program for (macOS):
// `go vet` needs every dependency compiled for the target first (the standard library and the
// dependencies, about 300 s of CPU per platform on this project, a third of it the generated
// SQLite), while type-checking them from source with golang.org/x/tools/go/packages costs a
// fraction of that and finds the same compile errors in Go code: an undefined or mistyped name, a
// file missing for one platform, a build-tag mistake. What it cannot find is what only the
// compiler's back end or the linker sees (assembly, linkname, an over-large constant in code
// generation); the Windows build (scripts/windows-build.sh) and the Linux build compile and link.
//
// The analyzers are cmd/vet's suite (GOROOT/src/cmd/vet/main.go) run through
// golang.org/x/tools/go/analysis/checker; their findings and every type error name the file and
// line. The exit status is 1 when there is any.
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/analysis/passes/appends"
	"golang.org/x/tools/go/analysis/passes/asmdecl"
	"golang.org/x/tools/go/analysis/passes/assign"
	"golang.org/x/tools/go/analysis/passes/atomic"
	"golang.org/x/tools/go/analysis/passes/bools"
	"golang.org/x/tools/go/analysis/passes/buildtag"
	"golang.org/x/tools/go/analysis/passes/cgocall"
	"golang.org/x/tools/go/analysis/passes/composite"
	"golang.org/x/tools/go/analysis/passes/copylock"
	"golang.org/x/tools/go/analysis/passes/defers"
	"golang.org/x/tools/go/analysis/passes/directive"
	"golang.org/x/tools/go/analysis/passes/errorsas"
	"golang.org/x/tools/go/analysis/passes/framepointer"
	"golang.org/x/tools/go/analysis/passes/hostport"
	"golang.org/x/tools/go/analysis/passes/httpresponse"
	"golang.org/x/tools/go/analysis/passes/ifaceassert"
	"golang.org/x/tools/go/analysis/passes/loopclosure"
	"golang.org/x/tools/go/analysis/passes/lostcancel"
	"golang.org/x/tools/go/analysis/passes/nilfunc"
	"golang.org/x/tools/go/analysis/passes/printf"
	"golang.org/x/tools/go/analysis/passes/shift"
	"golang.org/x/tools/go/analysis/passes/sigchanyzer"
	"golang.org/x/tools/go/analysis/passes/slog"
	"golang.org/x/tools/go/analysis/passes/stdmethods"
	"golang.org/x/tools/go/analysis/passes/stdversion"
	"golang.org/x/tools/go/analysis/passes/stringintconv"
	"golang.org/x/tools/go/analysis/passes/structtag"
	"golang.org/x/tools/go/analysis/passes/testinggoroutine"
	"golang.org/x/tools/go/analysis/passes/tests"
	"golang.org/x/tools/go/analysis/passes/timeformat"
	"golang.org/x/tools/go/analysis/passes/unmarshal"
	"golang.org/x/tools/go/analysis/passes/unreachable"
	"golang.org/x/tools/go/analysis/passes/unsafeptr"
	"golang.org/x/tools/go/analysis/passes/unusedresult"
	"golang.org/x/tools/go/analysis/passes/waitgroup"
	"golang.org/x/tools/go/packages"
)

// vetSuite is cmd/vet's list of analyzers.
var vetSuite = []*analysis.Analyzer{
	appends.Analyzer, asmdecl.Analyzer, assign.Analyzer, atomic.Analyzer, bools.Analyzer,
	buildtag.Analyzer, cgocall.Analyzer, composite.Analyzer, copylock.Analyzer, defers.Analyzer,
	directive.Analyzer, errorsas.Analyzer, framepointer.Analyzer, hostport.Analyzer,
	httpresponse.Analyzer, ifaceassert.Analyzer, loopclosure.Analyzer, lostcancel.Analyzer,
	nilfunc.Analyzer, printf.Analyzer, shift.Analyzer, sigchanyzer.Analyzer, slog.Analyzer,
	stdmethods.Analyzer, stdversion.Analyzer, stringintconv.Analyzer, structtag.Analyzer,
	testinggoroutine.Analyzer, tests.Analyzer, timeformat.Analyzer, unmarshal.Analyzer,
	unreachable.Analyzer, unsafeptr.Analyzer, unusedresult.Analyzer, waitgroup.Analyzer,
}

func main() {
	patterns := os.Args[1:]
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	n, err := run(".", os.Environ(), patterns, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "typecheck:", err)
		os.Exit(2)
	}
	if n > 0 {
		os.Exit(1)
	}
}

// run loads patterns in dir from source for the GOOS and GOARCH of env (with TYPECHECK_TAGS as
// the build tags), prints every problem to w and returns how many it printed.
func run(dir string, env, patterns []string, w io.Writer) (int, error) {
	getenv := func(k string) string {
		v := ""
		for _, kv := range env {
			if name, val, ok := strings.Cut(kv, "="); ok && name == k {
				v = val
			}
		}
		return strings.TrimSpace(v)
	}
	cfg := &packages.Config{Dir: dir, Mode: packages.LoadAllSyntax, Tests: true, Env: append(slices.Clip(env), "CGO_ENABLED=0")}
	if tags := getenv("TYPECHECK_TAGS"); tags != "" {
		cfg.BuildFlags = []string{"-tags=" + tags}
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return 0, err
	}
	var problems []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			problems = append(problems, fmt.Sprintf("%s: %s", p.PkgPath, e))
		}
	})
	if len(problems) > 0 {
		return print(w, problems), nil
	}
	g, err := checker.Analyze(vetSuite, pkgs, &checker.Options{})
	if err != nil {
		return 0, err
	}
	for act := range g.All() {
		if !act.IsRoot {
			continue
		}
		if act.Err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s: %v", act.Package.PkgPath, act.Analyzer.Name, act.Err))
		}
		for _, d := range act.Diagnostics {
			problems = append(problems, fmt.Sprintf("%s: %s (%s)", act.Package.Fset.Position(d.Pos), d.Message, act.Analyzer.Name))
		}
	}
	goos, goarch := cmp.Or(getenv("GOOS"), runtime.GOOS), cmp.Or(getenv("GOARCH"), runtime.GOARCH)
	fmt.Fprintf(w, "typecheck: %d packages checked for %s/%s\n", len(pkgs), goos, goarch)
	return print(w, problems), nil
}

// print writes each problem once, sorted, and returns how many there were.
func print(w io.Writer, problems []string) int {
	slices.Sort(problems)
	problems = slices.Compact(problems)
	for _, p := range problems {
		fmt.Fprintln(w, p)
	}
	return len(problems)
}

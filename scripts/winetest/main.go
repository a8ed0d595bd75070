// Command winetest runs the Go tests of Windows builds (GOOS=windows GOARCH=amd64) under Wine on
// Linux, and says what ran, what passed, and what was skipped and why:
//
//	go run ./scripts/winetest                  # every package the list marks "run"
//	go run ./scripts/winetest ./vault          # only these (each must be marked run)
//	go run ./scripts/winetest -run TestX ./app/cli   # only the tests -run matches
//
// scripts/wine-packages.txt is the one list of what runs: every Go package with tests is in it,
// marked "run", or "skip" followed by the reason; a package that runs may have tests that do
// not ("skip-test NAME REASON"), or run only some ("only-test NAME REASON", the reason saying why
// the others do not); a package missing from the list, or a listed test that does not exist, is
// an error, so nothing is left out silently. Each test binary runs in its package's folder, in a fresh
// Wine prefix (scripts/wine-prefix.sh), a few at a time, with POPPYDESK_REQUIRE_KEYRING=1: the
// keyring is Wine's Credential Manager, and its tests must run rather than skip. The output of
// each binary goes through `go tool test2json`; logs and events are kept in out/wine/logs. The
// summary lists each package's result, and each skipped test with the reason it gave.
//
// Two things differ from a Windows machine, both because of Debian 12's Wine 8.0:
//
//   - Go's runtime needs ProcessPrng from bcryptprimitives.dll, which Wine 8.0 lacks;
//     scripts/wine/bcryptprimitives.c provides it (scripts/wine-prefix.sh builds it).
//   - Wine 8.0 answers NtSetInformationFile(FileDispositionInformationEx) with
//     STATUS_NOT_IMPLEMENTED, so Go 1.26's os.RemoveAll, and with it every t.TempDir clean-up,
//     fails with "Invalid function". The test binaries are built with -overlay, replacing Go's
//     internal/syscall/windows/at_windows.go by a copy in which that status takes Go's own
//     fallback (FileDispositionInformation), as STATUS_NOT_SUPPORTED does on file systems without
//     POSIX deletion. Windows 10 and later never answer it, so the code under test is the same.
//
// It is a program rather than a shell script because it reads test2json events.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	listFile := flag.String("list", "scripts/wine-packages.txt", "the list of packages and what happens to each")
	outDir := flag.String("out", "out/wine", "where the binaries, the prefix and the logs go")
	jobs := flag.Int("j", 2, "test binaries run at once")
	timeout := flag.Duration("timeout", 10*time.Minute, "per test binary")
	runRE := flag.String("run", "", "run only the tests this regular expression matches (go test -run)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/winetest [-j N] [-timeout D] [-run REGEXP] [PACKAGE...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(context.Background(), config{list: *listFile, out: *outDir, jobs: *jobs, timeout: *timeout, run: *runRE, only: flag.Args()}); err != nil {
		fmt.Fprintln(os.Stderr, "winetest:", err)
		os.Exit(1)
	}
}

type config struct {
	list, out string
	run       string // -test.run for every binary, "" for all tests
	jobs      int
	timeout   time.Duration
	only      []string
}

func run(ctx context.Context, cfg config) error {
	start := time.Now()
	raw, err := os.ReadFile(cfg.list)
	if err != nil {
		return err
	}
	entries, err := parseList(string(raw))
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.list, err)
	}
	pkgs, err := listPackages(ctx)
	if err != nil {
		return err
	}
	toRun, noTests, err := plan(entries, pkgs, cfg.only)
	if err != nil {
		return fmt.Errorf("%w (in %s)", err, cfg.list)
	}
	out, err := filepath.Abs(cfg.out)
	if err != nil {
		return err
	}
	for _, d := range []string{"bin", "logs"} {
		os.RemoveAll(filepath.Join(out, d))
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			return err
		}
	}

	// The prefix takes a while the first time; it is made while the binaries build.
	prefix := filepath.Join(out, "prefix")
	prefixDone := make(chan error, 1)
	go func() {
		cmd := exec.CommandContext(ctx, "scripts/wine-prefix.sh", prefix)
		logf, err := os.Create(filepath.Join(out, "prefix.log"))
		if err != nil {
			prefixDone <- err
			return
		}
		defer logf.Close()
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Run(); err != nil {
			prefixDone <- fmt.Errorf("making the Wine prefix failed (%v); see %s", err, logf.Name())
			return
		}
		prefixDone <- nil
	}()

	buildStart := time.Now()
	overlay, err := writeOverlay(out)
	if err != nil {
		<-prefixDone
		return err
	}
	fmt.Printf("winetest: building %d test binaries for windows/amd64\n", len(toRun))
	args := append([]string{"test", "-c", "-overlay", overlay, "-o", filepath.Join(out, "bin") + string(filepath.Separator)}, toRun...)
	build := exec.CommandContext(ctx, "go", args...)
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		<-prefixDone
		return fmt.Errorf("building the test binaries failed: %v\n%s", err, b)
	}
	buildTime := time.Since(buildStart)
	if err := <-prefixDone; err != nil {
		return err
	}

	wine := wineBinary()
	runStart := time.Now()
	results := make([]result, len(toRun))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(cfg.jobs, 1))
	for i, pkg := range toRun {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			run := entries[pkg].onlyPattern()
			if cfg.run != "" {
				run = cfg.run
			}
			results[i] = runPackage(ctx, pkg, run, entries[pkg].skipPattern(), wine, prefix, out, cfg.timeout)
		})
	}
	wg.Wait()
	server := exec.Command(filepath.Join(filepath.Dir(wine), "wineserver"), "--kill")
	server.Env = append(os.Environ(), "WINEPREFIX="+prefix)
	server.Run()

	failed := summarize(os.Stdout, results, entries, noTests)
	fmt.Printf("\nwinetest: built in %.0f s, ran in %.0f s (%d at a time), total %.0f s\n",
		buildTime.Seconds(), time.Since(runStart).Seconds(), max(cfg.jobs, 1), time.Since(start).Seconds())
	if failed > 0 {
		return fmt.Errorf("%d of %d packages failed under Wine; their logs are in %s", failed, len(results), filepath.Join(cfg.out, "logs"))
	}
	return nil
}

// entry is what the list says of a package: whether it runs, or why not, and the tests of a
// package that runs that do not, with the reason for each.
type entry struct {
	pkg, why  string
	run       bool
	skipTests map[string]string
	onlyTests map[string]string // when not empty, the only tests that run, each with why the others do not
}

// parseList reads scripts/wine-packages.txt, with blank lines and #-comments: per package one
// "PACKAGE run" or "PACKAGE skip REASON", and for a package that runs any number of
// "PACKAGE skip-test TEST REASON" or "PACKAGE only-test TEST REASON" (TEST a top-level test's
// name).
func parseList(s string) (map[string]*entry, error) {
	out := map[string]*entry{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		bad := func(format string, a ...any) error {
			return fmt.Errorf("line %d: "+format, append([]any{i + 1}, a...)...)
		}
		if len(f) < 2 {
			return nil, bad("want \"PACKAGE run\", \"PACKAGE skip REASON\" or \"PACKAGE skip-test TEST REASON\", got %q", line)
		}
		e := out[f[0]]
		switch {
		case f[1] == "skip-test" || f[1] == "only-test":
			if e == nil || !e.run {
				return nil, bad("%s for %s, which is not marked run above", f[1], f[0])
			}
			if len(f) < 4 || !strings.HasPrefix(f[2], "Test") {
				return nil, bad("want \"%s %s TEST REASON\", got %q", f[0], f[1], line)
			}
			_, dup1 := e.skipTests[f[2]]
			_, dup2 := e.onlyTests[f[2]]
			if dup1 || dup2 {
				return nil, bad("%s %s is listed twice", f[0], f[2])
			}
			if f[1] == "skip-test" {
				e.skipTests[f[2]] = strings.Join(f[3:], " ")
			} else {
				e.onlyTests[f[2]] = strings.Join(f[3:], " ")
			}
			continue
		case e != nil:
			return nil, bad("%s is listed twice", f[0])
		case len(f) == 2 && f[1] == "run":
			e = &entry{pkg: f[0], run: true, skipTests: map[string]string{}, onlyTests: map[string]string{}}
		case len(f) >= 3 && f[1] == "skip":
			e = &entry{pkg: f[0], why: strings.Join(f[2:], " ")}
		case len(f) == 2 && f[1] == "skip":
			return nil, bad("%s is skipped without a reason", f[0])
		default:
			return nil, bad("want \"PACKAGE run\", \"PACKAGE skip REASON\" or \"PACKAGE skip-test TEST REASON\", got %q", line)
		}
		out[f[0]] = e
	}
	return out, nil
}

// skipPattern is the -test.skip value for the tests the list skips in e ("" for none).
func (e *entry) skipPattern() string { return pattern(e.skipTests) }

// onlyPattern is the -test.run value for the only tests the list runs in e ("" for all).
func (e *entry) onlyPattern() string { return pattern(e.onlyTests) }

// pattern matches exactly the names in tests ("" for none).
func pattern(tests map[string]string) string {
	if len(tests) == 0 {
		return ""
	}
	names := make([]string, 0, len(tests))
	for n := range tests {
		names = append(names, regexp.QuoteMeta(n))
	}
	slices.Sort(names)
	return "^(" + strings.Join(names, "|") + ")$"
}

// pkgInfo is one package of `go list ./...`, by its path relative to the module ("./vault").
type pkgInfo struct {
	rel      string
	hasTests bool
	tests    map[string]bool // its top-level tests (func TestX(t *testing.T))
}

func listPackages(ctx context.Context) ([]pkgInfo, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-f", "{{.ImportPath}} {{.Module.Path}} {{.Dir}} {{len .TestGoFiles}} {{len .XTestGoFiles}}", "./...")
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var out []pkgInfo
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var imp, mod, dir string
		var t, xt int
		if _, err := fmt.Sscan(line, &imp, &mod, &dir, &t, &xt); err != nil {
			return nil, fmt.Errorf("go list printed %q: %v", line, err)
		}
		tests, err := testNames(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, pkgInfo{rel: "." + strings.TrimPrefix(imp, mod), hasTests: t+xt > 0, tests: tests})
	}
	return out, nil
}

// testFunc matches the declaration of a top-level test.
var testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(t \*testing\.T\)`)

// testNames returns the names of the top-level tests declared in dir's _test.go files.
func testNames(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
	}
	return names, nil
}

// plan checks the list against the packages and returns those to run (only the ones asked for,
// if any) and those without tests.
func plan(list map[string]*entry, pkgs []pkgInfo, only []string) (toRun, noTests []string, err error) {
	known := map[string]bool{}
	var missing []string
	for _, p := range pkgs {
		known[p.rel] = true
		if !p.hasTests {
			noTests = append(noTests, p.rel)
			continue
		}
		e, ok := list[p.rel]
		if !ok {
			missing = append(missing, p.rel)
			continue
		}
		for name := range mapsConcat(e.skipTests, e.onlyTests) {
			if !p.tests[name] {
				return nil, nil, fmt.Errorf("%s has no test %s to skip; remove the line or name the test as it is now", p.rel, name)
			}
		}
		if e.run {
			toRun = append(toRun, p.rel)
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("packages with tests that are not listed (add each as run, or skip with the reason): %s", strings.Join(missing, " "))
	}
	for p := range list {
		if !known[p] {
			return nil, nil, fmt.Errorf("%s is listed but is not a package of this module", p)
		}
	}
	if len(only) > 0 {
		for _, p := range only {
			if e, ok := list[p]; !ok || !e.run {
				return nil, nil, fmt.Errorf("%s is not marked run", p)
			}
		}
		toRun = only
	}
	seen := map[string]string{}
	for _, p := range toRun {
		if other, dup := seen[binaryName(p)]; dup {
			return nil, nil, fmt.Errorf("%s and %s both build %s", other, p, binaryName(p))
		}
		seen[binaryName(p)] = p
	}
	return toRun, noTests, nil
}

// binaryName is the name `go test -c -o DIR/` gives package rel's test binary.
func binaryName(rel string) string {
	if rel == "." {
		return "poppydesk.test.exe"
	}
	return filepath.Base(rel) + ".test.exe"
}

// overlayFrom and overlayTo are the lines of Go's internal/syscall/windows/at_windows.go that
// writeOverlay changes: STATUS_NOT_IMPLEMENTED (0xC0000002) joins the statuses that take the
// fallback deletion.
const (
	overlayFrom = "\t\tSTATUS_NOT_SUPPORTED:     // the file system doesn't support FILE_DISPOSITION_INFORMATION_EX or one of the flags\n"
	overlayTo   = "\t\tSTATUS_NOT_SUPPORTED,     // the file system doesn't support FILE_DISPOSITION_INFORMATION_EX or one of the flags\n" +
		"\t\tNTStatus(0xC0000002): // STATUS_NOT_IMPLEMENTED: Wine 8.0 (scripts/winetest)\n"
)

// patchDeleteat returns Go's at_windows.go with the Wine fallback, or an error when Go's source
// no longer has the lines it changes.
func patchDeleteat(src string) (string, error) {
	if strings.Count(src, overlayFrom) != 1 {
		return "", errors.New("Go's internal/syscall/windows/at_windows.go no longer has the switch on FileDispositionInformationEx's status that scripts/winetest changes; update overlayFrom for this Go version")
	}
	return strings.Replace(src, overlayFrom, overlayTo, 1), nil
}

// writeOverlay writes the patched at_windows.go and the -overlay file naming it.
func writeOverlay(out string) (string, error) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %w", err)
	}
	orig := filepath.Join(strings.TrimSpace(string(goroot)), "src", "internal", "syscall", "windows", "at_windows.go")
	src, err := os.ReadFile(orig)
	if err != nil {
		return "", err
	}
	patched, err := patchDeleteat(string(src))
	if err != nil {
		return "", err
	}
	dir := filepath.Join(out, "overlay")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Not a .go file, so that `go build ./...` does not take the folder for a package.
	file := filepath.Join(dir, "at_windows.go.overlay")
	if err := os.WriteFile(file, []byte(patched), 0o644); err != nil {
		return "", err
	}
	spec, _ := json.Marshal(map[string]map[string]string{"Replace": {orig: file}})
	overlay := filepath.Join(dir, "overlay.json")
	return overlay, os.WriteFile(overlay, spec, 0o644)
}

// wineBinary is $WINE64, wine64 on PATH, or Debian's /usr/lib/wine/wine64 (Debian's wine64
// package puts no wrapper on PATH).
func wineBinary() string {
	if w := os.Getenv("WINE64"); w != "" {
		return w
	}
	if w, err := exec.LookPath("wine64"); err == nil {
		return w
	}
	return "/usr/lib/wine/wine64"
}

// result is what one test binary did.
type result struct {
	pkg     string
	elapsed time.Duration
	err     error // the binary's failure (exit status, timeout), nil when it passed
	counts  map[string]int
	skips   []skip
	failed  []string // failed tests with their output
}

type skip struct{ test, why string }

// event is one line of `go tool test2json`.
type event struct {
	Action string
	Test   string
	Output string
}

// runPackage runs pkg's test binary under Wine in the package's folder, with only the
// environment a Windows test process needs; run is the -test.run pattern ("" for all) and skip
// the -test.skip pattern of the tests the list skips.
func runPackage(ctx context.Context, pkg, run, skip, wine, prefix, out string, timeout time.Duration) (res result) {
	res = result{pkg: pkg, counts: map[string]int{}}
	start := time.Now()
	defer func() { res.elapsed = time.Since(start) }()
	name := binaryName(pkg)
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	args := []string{"tool", "test2json", "-p", pkg, wine, filepath.Join(out, "bin", name), "-test.v=test2json", "-test.count=1", "-test.timeout=" + timeout.String()}
	if run != "" {
		args = append(args, "-test.run="+run)
	}
	if skip != "" {
		args = append(args, "-test.skip="+skip)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = pkg
	cmd.Env = []string{
		"HOME=" + os.Getenv("HOME"), "PATH=" + os.Getenv("PATH"), "USER=" + orDefault(os.Getenv("USER"), "root"), "LANG=C.UTF-8",
		"GOROOT=" + os.Getenv("GOROOT"), "GOPATH=" + os.Getenv("GOPATH"), "GOCACHE=" + os.Getenv("GOCACHE"), "GOFLAGS=" + os.Getenv("GOFLAGS"),
		"WINEPREFIX=" + prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=",
		"POPPYDESK_REQUIRE_KEYRING=1",
	}
	logf, err := os.Create(filepath.Join(out, "logs", strings.TrimSuffix(name, ".test.exe")+".json"))
	if err != nil {
		res.err = err
		return res
	}
	defer logf.Close()
	var stderr bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(logf, pw), &stderr
	parsed := make(chan struct{})
	go func() {
		defer close(parsed)
		res.counts, res.skips, res.failed = readEvents(pr)
	}()
	err = cmd.Run()
	pw.Close()
	<-parsed
	switch {
	case ctx.Err() != nil:
		res.err = fmt.Errorf("did not finish within %v", timeout+time.Minute)
	case err != nil:
		res.err = fmt.Errorf("%v %s", err, strings.TrimSpace(stderr.String()))
	case res.counts["pass"]+res.counts["fail"]+res.counts["skip"] == 0:
		res.err = errors.New("ran no test")
	}
	return res
}

// readEvents reads test2json events: the count of each test result, each skipped test with the
// output it printed (its reason), and each failed test with its output.
func readEvents(r io.Reader) (map[string]int, []skip, []string) {
	counts := map[string]int{}
	var skips []skip
	var failed []string
	output := map[string]*strings.Builder{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Test == "" {
			continue
		}
		switch e.Action {
		case "output":
			if strings.HasPrefix(e.Output, "=== ") || strings.HasPrefix(strings.TrimSpace(e.Output), "--- ") {
				continue
			}
			if output[e.Test] == nil {
				output[e.Test] = &strings.Builder{}
			}
			output[e.Test].WriteString(e.Output)
		case "pass", "fail", "skip":
			counts[e.Action]++
			text := ""
			if b := output[e.Test]; b != nil {
				text = strings.TrimSpace(b.String())
			}
			switch e.Action {
			case "skip":
				skips = append(skips, skip{e.Test, reason(text)})
			case "fail":
				failed = append(failed, e.Test+":\n"+text)
			}
			delete(output, e.Test)
		}
	}
	return counts, skips, failed
}

// reason is a skip's message without the file:line prefix go test puts before it.
func reason(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.Index(text, ": "); i > 0 && strings.Contains(text[:i], ".go:") {
		text = text[i+2:]
	}
	if text == "" {
		return "(no reason given)"
	}
	return strings.Join(strings.Fields(text), " ")
}

// summarize prints the table of packages, the skipped tests with their reasons and the
// failures, and returns how many packages failed.
func summarize(w io.Writer, results []result, list map[string]*entry, noTests []string) int {
	failed := 0
	fmt.Fprintf(w, "\n%-30s %-7s %5s %5s %5s %7s\n", "package", "result", "pass", "fail", "skip", "time")
	for _, r := range results {
		status := "ok"
		if r.err != nil {
			status = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "%-30s %-7s %5d %5d %5d %6.0fs\n", r.pkg, status, r.counts["pass"], r.counts["fail"], r.counts["skip"], r.elapsed.Seconds())
	}
	var skipped []string
	for p, e := range list {
		if !e.run {
			skipped = append(skipped, p)
		}
	}
	slices.Sort(skipped)
	for _, p := range skipped {
		fmt.Fprintf(w, "%-30s %-7s %s\n", p, "skipped", list[p].why)
	}
	for _, p := range noTests {
		fmt.Fprintf(w, "%-30s %-7s %s\n", p, "-", "no test files")
	}
	fmt.Fprintln(w, "\nTests the list skips under Wine, with its reasons:")
	for _, r := range results {
		e := list[r.pkg]
		for _, n := range slices.Sorted(maps.Keys(e.onlyTests)) {
			fmt.Fprintf(w, "  %s: every test but %s: %s\n", r.pkg, n, e.onlyTests[n])
		}
		names := make([]string, 0, len(e.skipTests))
		for n := range e.skipTests {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(w, "  %s %s: %s\n", r.pkg, n, e.skipTests[n])
		}
	}
	fmt.Fprintln(w, "\nTests that skipped themselves under Wine, with their reasons:")
	n := 0
	for _, r := range results {
		for _, s := range r.skips {
			fmt.Fprintf(w, "  %s %s: %s\n", r.pkg, s.test, s.why)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, r := range results {
		if r.err == nil {
			continue
		}
		fmt.Fprintf(w, "\n--- %s: %v\n", r.pkg, r.err)
		for i, f := range r.failed {
			if i == 5 {
				fmt.Fprintf(w, "  … and %d more failed tests\n", len(r.failed)-5)
				break
			}
			fmt.Fprintln(w, indent(tail(f, 30)))
		}
	}
	return failed
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = append([]string{"  …"}, l[len(l)-lines:]...)
	}
	return strings.Join(l, "\n")
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// mapsConcat is a and b in one map (b's values for names in both).
func mapsConcat(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

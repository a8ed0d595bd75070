// Command package builds Poppydesk's Debian package (`make package`) with nfpm
// (github.com/goreleaser/nfpm/v2) used as a library.
//
// It takes the release binary (`make build` → build/bin/poppydesk, and the poppydesk-mcp program
// beside it, which MCP clients start) and the files in build/linux
// (the nfpm configuration, the desktop entry and the AppStream metainfo), generates what is
// derived at package time — the hicolor icons from build/appicon.png (scaled with
// golang.org/x/image/draw, Catmull-Rom) and the man page (the binary's own `poppydesk man`,
// gzipped) — and writes build/poppydesk_VERSION_ARCH.deb. The Debian version comes from
// `git describe` (see [debianVersion]); file times are the last commit's time, so the same commit
// gives the same package.
//
// Run it from the repository root:
//
//	go run ./scripts/package -version "$(git describe --tags --always --dirty)"
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"golang.org/x/image/draw"
)

// IconSizes are the hicolor sizes the package installs (pixels, square).
var iconSizes = []int{16, 22, 24, 32, 48, 64, 128, 256, 512}

// options are what one packaging run works with; paths are relative to the repository root.
type options struct {
	Version string // `git describe --tags --always --dirty` of the build
	Bin     string // the release binary
	Relay   string // the poppydesk-mcp program built beside it
	Config  string // the nfpm configuration
	Icon    string // the source icon (square PNG, at least 512 px)
	Stage   string // where the generated files go (emptied first)
	OutDir  string // where the .deb goes
	Arch    string // Go architecture of the binary
}

func main() {
	var o options
	flag.StringVar(&o.Version, "version", "", "the build's `git describe --tags --always --dirty` (default: asked of git)")
	flag.StringVar(&o.Bin, "bin", "build/bin/poppydesk", "the release binary (`make build`)")
	flag.StringVar(&o.Relay, "relay", "build/bin/poppydesk-mcp", "the poppydesk-mcp program (`make build`)")
	flag.StringVar(&o.Config, "config", "build/linux/nfpm.yaml", "the nfpm configuration")
	flag.StringVar(&o.Icon, "icon", "build/appicon.png", "the icon the hicolor sizes are made from")
	flag.StringVar(&o.Stage, "stage", "out/package", "a scratch folder for the generated files")
	flag.StringVar(&o.OutDir, "out", "build", "the folder the .deb is written to")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "the binary's Go architecture")
	flag.Parse()
	ctx := context.Background()
	if o.Version == "" {
		v, err := git(ctx, "describe", "--tags", "--always", "--dirty")
		if err != nil {
			fail(err)
		}
		o.Version = v
	}
	res, err := build(ctx, o)
	if err != nil {
		fail(err)
	}
	fmt.Printf("package: %s (%d bytes, version %s)\n", res.Path, res.Size, res.DebVersion)
	for _, f := range res.Files {
		fmt.Printf("  %8d  %s\n", f.Size, f.Path)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "package: %v\n", err)
	os.Exit(1)
}

// result is what a packaging run made.
type result struct {
	Path       string
	Size       int64
	DebVersion string
	Files      []packagedFile
}

type packagedFile struct {
	Path string
	Size int64
}

func build(ctx context.Context, o options) (result, error) {
	if _, err := os.Stat(o.Config); err != nil {
		return result{}, fmt.Errorf("%s is missing (%v): run this from the repository root", o.Config, err)
	}
	if err := checkBinary(ctx, o.Version, o.Bin, "version"); err != nil {
		return result{}, err
	}
	if err := checkBinary(ctx, o.Version, o.Relay, "--version"); err != nil {
		return result{}, err
	}
	debVersion, err := debianVersion(o.Version, func(rev string) (int, error) {
		out, err := git(ctx, "rev-list", "--count", rev)
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(out)
	})
	if err != nil {
		return result{}, err
	}
	mtime, err := commitTime(ctx)
	if err != nil {
		return result{}, err
	}

	if err := os.RemoveAll(o.Stage); err != nil {
		return result{}, err
	}
	if err := writeIcons(o.Icon, filepath.Join(o.Stage, "icons")); err != nil {
		return result{}, err
	}
	if err := writeManPage(ctx, o.Bin, mtime, filepath.Join(o.Stage, "poppydesk.1.gz")); err != nil {
		return result{}, err
	}

	vars := map[string]string{"VERSION": debVersion, "ARCH": o.Arch, "BIN": o.Bin, "RELAY": o.Relay, "STAGE": o.Stage}
	cfg, err := nfpm.ParseFileWithEnvMapping(o.Config, func(k string) string { return vars[k] })
	if err != nil {
		return result{}, fmt.Errorf("reading %s: %w", o.Config, err)
	}
	info, err := cfg.Get("deb")
	if err != nil {
		return result{}, fmt.Errorf("reading %s: %w", o.Config, err)
	}
	info.MTime = mtime
	info = nfpm.WithDefaults(info)
	if err := nfpm.Validate(info); err != nil {
		return result{}, fmt.Errorf("%s: %w", o.Config, err)
	}
	packager := deb.Default
	target := filepath.Join(o.OutDir, packager.ConventionalFileName(info))
	// One package in the output folder, so `apt-get install ./build/poppydesk_*.deb` means this one.
	old, _ := filepath.Glob(filepath.Join(o.OutDir, info.Name+"_*.deb"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return result{}, err
		}
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return result{}, err
	}
	f, err := os.Create(target)
	if err != nil {
		return result{}, err
	}
	info.Target = target
	if err := packager.Package(info, f); err != nil {
		f.Close()
		os.Remove(target)
		return result{}, fmt.Errorf("building %s: %w", target, err)
	}
	if err := f.Close(); err != nil {
		return result{}, err
	}
	st, err := os.Stat(target)
	if err != nil {
		return result{}, err
	}
	res := result{Path: target, Size: st.Size(), DebVersion: debVersion}
	for _, c := range info.Contents {
		if c.Type != "file" {
			continue
		}
		var size int64
		if fi, err := os.Stat(c.Source); err == nil {
			size = fi.Size()
		}
		res.Files = append(res.Files, packagedFile{Path: c.Destination, Size: size})
	}
	return res, nil
}

// checkBinary makes sure bin is the build of version (it prints "NAME VERSION" when run with
// arg): a package must not ship a stale binary under a new version.
func checkBinary(ctx context.Context, version, bin, arg string) error {
	out, err := exec.CommandContext(ctx, bin, arg).Output()
	if err != nil {
		return fmt.Errorf("running %s %s failed (%v): build it first with `make build`", bin, arg, err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[1] != version {
		return fmt.Errorf("%s says %q, but the tree is %s: rebuild it with `make build`", bin, strings.TrimSpace(string(out)), version)
	}
	return nil
}

var (
	describeTagged = regexp.MustCompile(`^v?([0-9][0-9A-Za-z.+-]*?)(?:-([0-9]+)-g([0-9a-f]{4,40}))?$`)
	describeHash   = regexp.MustCompile(`^[0-9a-f]{4,40}$`)
	debianValid    = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`)
)

// debianVersion turns `git describe --tags --always --dirty` output into a Debian version that
// sorts in commit order:
//
//	v1.2.3               → 1.2.3
//	v1.2.3-4-gabc1234    → 1.2.3+git4.abc1234   (4 commits after the tag)
//	v1.2.0-rc1           → 1.2.0~rc1            (a pre-release sorts before its release)
//	abc1234 (no tag)     → 0.0.0+git70.abc1234  (70 commits in the history)
//	…-dirty              → ….dirty              (uncommitted changes; after the same commit)
//
// commits counts the commits reachable from a revision (`git rev-list --count`).
func debianVersion(describe string, commits func(rev string) (int, error)) (string, error) {
	d, dirty := strings.CutSuffix(strings.TrimSpace(describe), "-dirty")
	var v string
	switch {
	case describeHash.MatchString(d):
		n, err := commits(d)
		if err != nil {
			return "", fmt.Errorf("counting the commits up to %s: %w", d, err)
		}
		v = fmt.Sprintf("0.0.0+git%d.%s", n, d)
	case describeTagged.MatchString(d):
		m := describeTagged.FindStringSubmatch(d)
		v = strings.ReplaceAll(m[1], "-", "~")
		if m[2] != "" {
			v += "+git" + m[2] + "." + m[3]
		}
	default:
		return "", fmt.Errorf("cannot make a Debian version of %q: tags must look like v1.2.3", describe)
	}
	if dirty {
		if strings.Contains(v, "+") {
			v += ".dirty"
		} else {
			v += "+dirty"
		}
	}
	if !debianValid.MatchString(v) {
		return "", fmt.Errorf("cannot make a Debian version of %q (got %q): tags must look like v1.2.3", describe, v)
	}
	return v, nil
}

// writeIcons writes the icon at every hicolor size into dir (dir/NxN.png; the nfpm
// configuration names each one's place under /usr/share/icons/hicolor).
func writeIcons(src, dir string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("%s is not a PNG: %w", src, err)
	}
	b := img.Bounds()
	if b.Dx() != b.Dy() || b.Dx() < iconSizes[len(iconSizes)-1] {
		return fmt.Errorf("%s is %dx%d; the icon must be square and at least %d px", src, b.Dx(), b.Dy(), iconSizes[len(iconSizes)-1])
	}
	for _, n := range iconSizes {
		dst := image.NewNRGBA(image.Rect(0, 0, n, n))
		draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, dst); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%dx%d.png", n, n)), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeManPage writes the binary's own man page (`poppydesk man`, generated from its command
// list), gzipped the way Debian wants (best compression, no name or time in the header).
func writeManPage(ctx context.Context, bin string, date time.Time, dst string) error {
	cmd := exec.CommandContext(ctx, bin, "man")
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(date.Unix(), 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	page, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s man failed: %v %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	if !bytes.HasPrefix(page, []byte(".TH ")) {
		return fmt.Errorf("%s man printed no man page", bin)
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(page); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// commitTime is the time of the last commit (or SOURCE_DATE_EPOCH when set), the time of every
// file in the package.
func commitTime(ctx context.Context) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		out, err := git(ctx, "log", "-1", "--format=%ct")
		if err != nil {
			return time.Time{}, err
		}
		s = out
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH or the commit time %q is not a Unix time", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || stderr.Len() > 0 {
			return "", fmt.Errorf("git %s failed: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("git %s failed: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

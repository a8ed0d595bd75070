package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestDebianVersion(t *testing.T) {
	commits := func(rev string) (int, error) {
		if rev == "65a4b86" || rev == "70abcde" {
			return map[string]int{"65a4b86": 70, "70abcde": 71}[rev], nil
		}
		return 0, errors.New("unknown revision")
	}
	cases := []struct{ describe, want string }{
		{"65a4b86", "0.0.0+git70.65a4b86"},
		{"65a4b86-dirty", "0.0.0+git70.65a4b86.dirty"},
		{"70abcde", "0.0.0+git71.70abcde"},
		{"v0.1.0-rc1", "0.1.0~rc1"},
		{"v0.1.0-rc1-2-gabc1234", "0.1.0~rc1+git2.abc1234"},
		{"v0.1.0", "0.1.0"},
		{"v0.1.0-dirty", "0.1.0+dirty"},
		{"v0.1.0-3-gdef5678", "0.1.0+git3.def5678"},
		{"v0.1.0-3-gdef5678-dirty", "0.1.0+git3.def5678.dirty"},
		{"v0.1.0-12-g0123abc", "0.1.0+git12.0123abc"},
		{"1.0.0", "1.0.0"},
	}
	var got []string
	for _, tc := range cases {
		v, err := debianVersion(tc.describe, commits)
		if err != nil || v != tc.want {
			t.Errorf("debianVersion(%q) = %q, %v; want %q", tc.describe, v, err, tc.want)
		}
		got = append(got, v)
	}
	for _, bad := range []string{"", "release-one", "v1.0 beta", "dev"} {
		if v, err := debianVersion(bad, commits); err == nil {
			t.Errorf("debianVersion(%q) = %q, want an error", bad, v)
		}
	}
	// The cases are in commit order; dpkg itself must sort them so (an upgrade is an upgrade).
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("dpkg is not installed; the order is not checked")
	}
	for i := 1; i < len(got); i++ {
		if err := exec.Command("dpkg", "--compare-versions", got[i-1], "lt", got[i]).Run(); err != nil {
			t.Errorf("dpkg does not sort %s before %s", got[i-1], got[i])
		}
	}
}

// repoRoot is the repository root (the test runs in scripts/package).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/bootstrap.sh installs it)", tool)
		}
	}
}

// TestPackage builds a package from a plain `go build` of Poppydesk (it has the same command
// list as the release binary, so the same `version` and `man`) and checks it with dpkg-deb: the
// control fields, the exact file list, the generated icons and man page, and the desktop entry and
// metainfo with their validators.
func TestPackage(t *testing.T) {
	need(t, "dpkg-deb", "go", "git")
	root := repoRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "poppydesk")
	const describe = "v1.2.3-4-gabcdef0"
	relay := filepath.Join(dir, "poppydesk-mcp")
	goBuild(t, root, describe, bin, ".")
	goBuild(t, root, describe, relay, "./cmd/poppydesk-mcp")
	t.Chdir(root)
	out := filepath.Join(dir, "out")
	res, err := buildPackage(t, options{Version: describe, Bin: bin, Relay: relay, Config: "build/linux/nfpm.yaml", Icon: "build/appicon.png",
		Stage: filepath.Join(dir, "stage"), OutDir: out, Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(out, "poppydesk_1.2.3+git4.abcdef0_amd64.deb"); res.Path != want {
		t.Errorf("package path = %s, want %s", res.Path, want)
	}

	field := func(name string) string {
		out, err := exec.Command("dpkg-deb", "-f", res.Path, name).Output()
		if err != nil {
			t.Fatalf("dpkg-deb -f %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	for name, want := range map[string]string{
		"Package": "poppydesk", "Version": "1.2.3+git4.abcdef0", "Architecture": "amd64",
		"Depends": "libc6, libgtk-3-0, libwebkit2gtk-4.1-0", "Recommends": "gnome-keyring, xdg-utils", "Suggests": "chromium",
	} {
		if got := field(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}

	listing, err := exec.Command("dpkg-deb", "--fsys-tarfile", res.Path).Output()
	if err != nil {
		t.Fatal(err)
	}
	tarList := exec.Command("tar", "-t")
	tarList.Stdin = bytes.NewReader(listing)
	names, err := tarList.Output()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, n := range strings.Fields(string(names)) {
		if !strings.HasSuffix(n, "/") {
			files = append(files, strings.TrimPrefix(n, "."))
		}
	}
	want := []string{"/usr/bin/poppydesk", "/usr/bin/poppydesk-mcp", "/usr/share/applications/poppydesk.desktop",
		"/usr/share/man/man1/poppydesk.1.gz", "/usr/share/metainfo/io.github.poppydesk.Poppydesk.metainfo.xml",
		"/usr/lib/systemd/system/poppydesk-operator.service", "/etc/poppydesk-operator/operator.env"}
	for _, n := range iconSizes {
		want = append(want, "/usr/share/icons/hicolor/"+strconv.Itoa(n)+"x"+strconv.Itoa(n)+"/apps/poppydesk.png")
	}
	slices.Sort(files)
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Errorf("files in the package:\n%s\nwant:\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
	}

	// The operator's settings are a conffile (kept across upgrades, removed on purge), and no
	// maintainer script enables or starts its service.
	if out, err := exec.Command("dpkg-deb", "-I", res.Path, "conffiles").Output(); err != nil || strings.TrimSpace(string(out)) != "/etc/poppydesk-operator/operator.env" {
		t.Errorf("conffiles: %q, %v; want /etc/poppydesk-operator/operator.env", out, err)
	}
	for _, script := range []string{"preinst", "postinst", "prerm", "postrm"} {
		if out, err := exec.Command("dpkg-deb", "-I", res.Path, script).Output(); err == nil {
			t.Errorf("the package has a %s script:\n%s", script, out)
		}
	}

	x := filepath.Join(dir, "x")
	if out, err := exec.Command("dpkg-deb", "-x", res.Path, x).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v %s", err, out)
	}
	for _, n := range iconSizes {
		f, err := os.Open(filepath.Join(x, "usr/share/icons/hicolor", strconv.Itoa(n)+"x"+strconv.Itoa(n), "apps/poppydesk.png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() != n || img.Bounds().Dy() != n {
			t.Errorf("icon %d: %v, %v", n, err, img.Bounds())
		}
	}
	zf, err := os.Open(filepath.Join(x, "usr/share/man/man1/poppydesk.1.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(zf)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(zr)
	zf.Close()
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("the man page's gzip header has a name %q or time %v (not reproducible)", zr.Name, zr.ModTime)
	}
	for _, s := range []string{".TH POPPYDESK 1", `"poppydesk v1.2.3\-4\-gabcdef0"`, `.SS "poppydesk mcp `, `poppydesk mcp setup CLIENT`, `\-\-yes`} {
		if !bytes.Contains(page, []byte(s)) {
			t.Errorf("the man page lacks %q", s)
		}
	}

	if _, err := exec.LookPath("desktop-file-validate"); err == nil {
		if out, err := exec.Command("desktop-file-validate", filepath.Join(x, "usr/share/applications/poppydesk.desktop")).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("desktop-file-validate: %v\n%s", err, out)
		}
	} else {
		t.Log("desktop-file-validate is not installed (scripts/bootstrap.sh installs it); the desktop entry is not validated")
	}
	if _, err := exec.LookPath("appstreamcli"); err == nil {
		if out, err := exec.Command("appstreamcli", "validate", "--no-net", filepath.Join(x, "usr/share/metainfo/io.github.poppydesk.Poppydesk.metainfo.xml")).CombinedOutput(); err != nil {
			t.Errorf("appstreamcli validate: %v\n%s", err, out)
		}
	} else {
		t.Log("appstreamcli is not installed (scripts/bootstrap.sh installs it); the metainfo is not validated")
	}
}

func TestPackageRefusesAStaleBinary(t *testing.T) {
	need(t, "go")
	root := repoRoot(t)
	dir := t.TempDir()
	bin, relay := filepath.Join(dir, "poppydesk"), filepath.Join(dir, "poppydesk-mcp")
	goBuild(t, root, "v1.0.0", bin, ".")
	goBuild(t, root, "v1.0.1", relay, "./cmd/poppydesk-mcp")
	t.Chdir(root)
	o := options{Version: "v1.0.1", Bin: bin, Relay: relay, Config: "build/linux/nfpm.yaml", Icon: "build/appicon.png",
		Stage: filepath.Join(dir, "stage"), OutDir: filepath.Join(dir, "out"), Arch: "amd64"}
	if _, err := buildPackage(t, o); err == nil || !strings.Contains(err.Error(), bin+" says") || !strings.Contains(err.Error(), "rebuild it with `make build`") {
		t.Errorf("err = %v, want the stale poppydesk refused", err)
	}
	goBuild(t, root, "v1.0.1", bin, ".")
	goBuild(t, root, "v1.0.0", relay, "./cmd/poppydesk-mcp")
	if _, err := buildPackage(t, o); err == nil || !strings.Contains(err.Error(), relay+" says") {
		t.Errorf("err = %v, want the stale poppydesk-mcp refused", err)
	}
}

// goBuild builds the package pkg of the module at root into out with the version version.
func goBuild(t *testing.T, root, version, out, pkg string) {
	t.Helper()
	gobuild := exec.Command("go", "build", "-o", out, "-ldflags", "-X main.version="+version, pkg)
	gobuild.Dir = root
	if msg, err := gobuild.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
}

func buildPackage(t *testing.T, o options) (result, error) {
	t.Helper()
	return build(context.Background(), o)
}

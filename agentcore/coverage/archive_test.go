package coverage_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/agentcore/coverage"
)

// entry is one entry of a test archive.
type entry struct {
	name     string
	body     string
	mode     int64
	typeflag byte   // tar only (0: regular)
	link     string // link target
	size     int    // zeros instead of body, when > 0
}

func tarGz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		tf := e.typeflag
		if tf == 0 {
			tf = tar.TypeReg
		}
		body := []byte(e.body)
		if e.size > 0 {
			body = make([]byte, e.size)
		}
		h := &tar.Header{Name: e.name, Mode: max(e.mode, 0o644), Typeflag: tf, Linkname: e.link, Format: tar.FormatPAX}
		if tf == tar.TypeReg {
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if tf == tar.TypeReg {
			tw.Write(body)
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func zipOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := fs.FileMode(max(e.mode, 0o644))
		switch e.typeflag {
		case tar.TypeSymlink:
			mode |= fs.ModeSymlink
		case tar.TypeDir:
			mode |= fs.ModeDir
		case tar.TypeFifo:
			mode |= fs.ModeNamedPipe
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		body := []byte(e.body + e.link)
		if e.size > 0 {
			body = make([]byte, e.size)
		}
		if e.typeflag != tar.TypeDir {
			w.Write(body)
		}
	}
	zw.Close()
	return buf.Bytes()
}

var skill = entry{name: "SKILL.md", body: "---\nname: s\ndescription: d\n---\n# S\n"}

// TestExtract: the archive safety rules of the Agent Skills proposal that spec 9.4 requires,
// one per row, for both archive formats; a refused archive gives nothing.
func TestExtract(t *testing.T) {
	small := coverage.Limits{MaxFiles: 4, MaxEntries: 8, MaxFile: 1 << 10, MaxTotal: 2 << 10}
	tests := []struct {
		name    string
		entries []entry
		lim     coverage.Limits
		refuse  string // a word of the reason ("" when accepted)
		tarOnly bool
	}{
		{name: "a skill with folders", entries: []entry{skill, {name: "references/", typeflag: tar.TypeDir}, {name: "references/a.md", body: "a"}, {name: "./scripts/run.sh", body: "#!/bin/sh\n", mode: 0o755}}},
		{name: "absolute path", entries: []entry{skill, {name: "/etc/passwd", body: "x"}}, refuse: "absolute"},
		{name: "parent segment", entries: []entry{skill, {name: "../outside.md", body: "x"}}, refuse: `".."`},
		{name: "parent segment inside", entries: []entry{skill, {name: "references/../../x.md", body: "x"}}, refuse: `".."`},
		{name: "backslash", entries: []entry{skill, {name: `..\x.md`, body: "x"}}, refuse: "backslash"},
		{name: "drive letter", entries: []entry{skill, {name: "C:x.md", body: "x"}}, refuse: "drive"},
		{name: "symbolic link inside", entries: []entry{skill, {name: "link", typeflag: tar.TypeSymlink, link: "SKILL.md"}}, refuse: "link"},
		{name: "symbolic link outside", entries: []entry{skill, {name: "link", typeflag: tar.TypeSymlink, link: "/etc/passwd"}}, refuse: "link"},
		{name: "hard link", entries: []entry{skill, {name: "hard", typeflag: tar.TypeLink, link: "SKILL.md"}}, refuse: "link", tarOnly: true},
		{name: "FIFO", entries: []entry{skill, {name: "fifo", typeflag: tar.TypeFifo}}, refuse: "special"},
		{name: "device", entries: []entry{skill, {name: "dev", typeflag: tar.TypeChar}}, refuse: "special", tarOnly: true},
		{name: "no SKILL.md at the root", entries: []entry{{name: "skill/SKILL.md", body: "x"}}, refuse: "SKILL.md"},
		{name: "duplicate", entries: []entry{skill, skill}, refuse: "twice"},
		{name: "file under a file", entries: []entry{skill, {name: "a", body: "x"}, {name: "a/b", body: "y"}}, refuse: "inside a path that is a file"},
		{name: "too many files", entries: []entry{skill, {name: "a", body: "1"}, {name: "b", body: "2"}, {name: "c", body: "3"}, {name: "d", body: "4"}}, lim: small, refuse: "more than 4 files"},
		{name: "file too large", entries: []entry{skill, {name: "big", size: 2 << 10}}, lim: small, refuse: "larger than"},
		{name: "total too large", entries: []entry{skill, {name: "a", size: 1000}, {name: "b", size: 1000}, {name: "c", size: 1000}}, lim: small, refuse: "unpacks to more than"},
		{name: "compression bomb", entries: []entry{skill, {name: "bomb", size: 8 << 20}}, refuse: "larger than"},
	}
	for _, tc := range tests {
		for _, format := range []string{"tar.gz", "zip"} {
			if tc.tarOnly && format == "zip" {
				continue
			}
			t.Run(tc.name+" "+format, func(t *testing.T) {
				lim := tc.lim
				if lim.MaxFiles == 0 {
					lim = coverage.DefaultLimits
				}
				data := tarGz(t, tc.entries...)
				if format == "zip" {
					data = zipOf(t, tc.entries...)
				}
				files, err := coverage.Extract(data, lim)
				if tc.refuse != "" {
					if err == nil || !errors.Is(err, coverage.ErrArchive) || !strings.Contains(err.Error(), tc.refuse) || files != nil {
						t.Fatalf("Extract = %d files, %v; want it refused for %q", len(files), err, tc.refuse)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if bad := outsideFolder(files, lim); bad != "" {
					t.Fatal(bad)
				}
			})
		}
	}
	if _, err := coverage.Extract([]byte("#!/bin/sh\necho not an archive\n"), coverage.DefaultLimits); !errors.Is(err, coverage.ErrArchive) {
		t.Fatalf("a file that is no archive: %v", err)
	}
}

// outsideFolder is the oracle of the archive safety rules: what is wrong with an accepted
// extraction ("" when nothing): every path stays inside the folder it would be unpacked to, and
// the limits hold.
func outsideFolder(files []coverage.File, lim coverage.Limits) string {
	if len(files) > lim.MaxFiles {
		return "more files than the limit"
	}
	dir := filepath.Join(string(filepath.Separator)+"skills", "s")
	var total int64
	hasSkill := false
	for _, f := range files {
		total += int64(len(f.Data))
		joined := filepath.Join(dir, filepath.FromSlash(f.Path))
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) || !strings.HasPrefix(joined, dir+string(filepath.Separator)) ||
			strings.Contains(f.Path, "\\") || strings.HasPrefix(f.Path, "/") {
			return "the path " + f.Path + " leaves the skill's folder"
		}
		if int64(len(f.Data)) > lim.MaxFile {
			return "a file larger than the limit: " + f.Path
		}
		hasSkill = hasSkill || f.Path == "SKILL.md"
	}
	if total > lim.MaxTotal {
		return "more bytes than the limit"
	}
	if !hasSkill {
		return "no SKILL.md at the root"
	}
	return ""
}

package coverage

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// Limits bound what an archive may unpack to (the proposal's "reasonable limit on total unpacked
// size", and a file count).
type Limits struct {
	MaxFiles   int   // regular files
	MaxEntries int   // entries of any kind, directories included
	MaxFile    int64 // bytes of one file
	MaxTotal   int64 // bytes of every file together
}

// DefaultLimits are the bounds ReadSkill uses.
var DefaultLimits = Limits{MaxFiles: 256, MaxEntries: 1024, MaxFile: 2 << 20, MaxTotal: 8 << 20}

// File is one file of a skill, in memory: a path relative to the skill's folder, its mode bits
// as the archive gives them (only to tell scripts apart; nothing is ever run) and its bytes.
type File struct {
	Path string
	Mode fs.FileMode
	Data []byte
}

// ArchiveError says why an archive was refused; nothing of a refused archive is used.
type ArchiveError struct {
	Entry  string // the entry's name as the archive wrote it ("" for the archive itself)
	Reason string
}

func (e *ArchiveError) Error() string {
	if e.Entry == "" {
		return "the skill archive is refused: " + e.Reason
	}
	return fmt.Sprintf("the skill archive is refused: entry %s %s", quoteShort(e.Entry), e.Reason)
}

// Extract unpacks a skill archive (a .tar.gz or a .zip, told apart by their signatures) in
// memory after the proposal's safety checks: it refuses the whole archive for an absolute path,
// a ".." segment, a backslash or NUL in a name, a symbolic or hard link, a device, FIFO or other
// special entry, a duplicate path or a file under a path that is a file, more than lim's files or
// entries, a file or total larger than lim's bytes (read through limited readers, so a
// compression bomb stops at the bound), or no SKILL.md at the root. Paths are returned cleaned
// ("./a" is "a"); each is local (filepath.IsLocal), so joined to any folder it stays inside.
func Extract(data []byte, lim Limits) ([]File, error) {
	switch {
	case len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b:
		return extractTarGz(data, lim)
	case bytes.HasPrefix(data, []byte("PK\x03\x04")) || bytes.HasPrefix(data, []byte("PK\x05\x06")):
		return extractZip(data, lim)
	}
	return nil, &ArchiveError{Reason: "is neither a gzip-compressed tar nor a zip archive, the two formats the Agent Skills proposal allows"}
}

// unpacked collects files and enforces the limits.
type unpacked struct {
	lim     Limits
	files   []File
	paths   map[string]bool // files
	dirs    map[string]bool // every parent folder of a file, and folder entries
	entries int
	total   int64
}

func (u *unpacked) entry(name string) error {
	u.entries++
	if u.entries > u.lim.MaxEntries {
		return &ArchiveError{Reason: fmt.Sprintf("has more than %d entries", u.lim.MaxEntries)}
	}
	return nil
}

func (u *unpacked) dir(name string) error {
	p, err := localPath(name)
	if err != nil {
		return err
	}
	if p == "." {
		return nil
	}
	if u.paths[p] {
		return &ArchiveError{Entry: name, Reason: "is a folder with the path of a file"}
	}
	u.dirs[p] = true
	return nil
}

func (u *unpacked) file(name string, mode fs.FileMode, size int64, r io.Reader) error {
	p, err := localPath(name)
	if err != nil {
		return err
	}
	if p == "." {
		return &ArchiveError{Entry: name, Reason: "is a file without a name"}
	}
	if u.paths[p] || u.dirs[p] {
		return &ArchiveError{Entry: name, Reason: "appears twice (or is also a folder)"}
	}
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		if u.paths[d] {
			return &ArchiveError{Entry: name, Reason: "is inside a path that is a file"}
		}
	}
	if len(u.files) == u.lim.MaxFiles {
		return &ArchiveError{Reason: fmt.Sprintf("has more than %d files", u.lim.MaxFiles)}
	}
	if size > u.lim.MaxFile {
		return &ArchiveError{Entry: name, Reason: fmt.Sprintf("is larger than %d bytes", u.lim.MaxFile)}
	}
	room := min(u.lim.MaxFile, u.lim.MaxTotal-u.total)
	b, err := io.ReadAll(io.LimitReader(r, room+1))
	if err != nil {
		return &ArchiveError{Entry: name, Reason: "could not be read: " + err.Error()}
	}
	if int64(len(b)) > room {
		if room < u.lim.MaxFile {
			return &ArchiveError{Reason: fmt.Sprintf("unpacks to more than %d bytes", u.lim.MaxTotal)}
		}
		return &ArchiveError{Entry: name, Reason: fmt.Sprintf("is larger than %d bytes", u.lim.MaxFile)}
	}
	u.total += int64(len(b))
	u.paths[p] = true
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		u.dirs[d] = true
	}
	u.files = append(u.files, File{Path: p, Mode: mode.Perm(), Data: b})
	return nil
}

func (u *unpacked) done() ([]File, error) {
	if !u.paths["SKILL.md"] {
		return nil, &ArchiveError{Reason: "has no SKILL.md at its root, which the Agent Skills proposal requires"}
	}
	return u.files, nil
}

// localPath checks an entry name and returns it cleaned: relative, slash-separated, no ".."
// segment, no backslash, NUL or drive letter.
func localPath(name string) (string, error) {
	refuse := func(why string) error { return &ArchiveError{Entry: name, Reason: why} }
	switch {
	case name == "":
		return "", refuse("has an empty name")
	case strings.ContainsAny(name, "\\\x00"):
		return "", refuse("has a backslash or NUL in its name")
	case strings.HasPrefix(name, "/"):
		return "", refuse("has an absolute path")
	case len(name) >= 2 && name[1] == ':':
		return "", refuse("has a drive letter")
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			return "", refuse("has a \"..\" segment, which would leave the skill's folder")
		}
	}
	p := path.Clean(name)
	if p != "." && !filepath.IsLocal(filepath.FromSlash(p)) {
		return "", refuse("is not a path inside the skill's folder")
	}
	return p, nil
}

func extractTarGz(data []byte, lim Limits) ([]File, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, &ArchiveError{Reason: "is not valid gzip: " + err.Error()}
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	u := &unpacked{lim: lim, paths: map[string]bool{}, dirs: map[string]bool{}}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &ArchiveError{Reason: "is not a valid tar archive: " + err.Error()}
		}
		if err := u.entry(h.Name); err != nil {
			return nil, err
		}
		switch h.Typeflag {
		case tar.TypeReg: // archive/tar reports the old TypeRegA as TypeReg
			if err := u.file(h.Name, fs.FileMode(h.Mode), h.Size, tr); err != nil {
				return nil, err
			}
		case tar.TypeDir:
			if err := u.dir(h.Name); err != nil {
				return nil, err
			}
		case tar.TypeSymlink, tar.TypeLink:
			return nil, &ArchiveError{Entry: h.Name, Reason: "is a link; skill archives may hold only files and folders"}
		default:
			return nil, &ArchiveError{Entry: h.Name, Reason: fmt.Sprintf("is a special entry (tar type %q); skill archives may hold only files and folders", h.Typeflag)}
		}
	}
	return u.done()
}

func extractZip(data []byte, lim Limits) ([]File, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, &ArchiveError{Reason: "is not a valid zip archive: " + err.Error()}
	}
	u := &unpacked{lim: lim, paths: map[string]bool{}, dirs: map[string]bool{}}
	for _, f := range zr.File {
		if err := u.entry(f.Name); err != nil {
			return nil, err
		}
		mode := f.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			return nil, &ArchiveError{Entry: f.Name, Reason: "is a link; skill archives may hold only files and folders"}
		case mode.IsDir():
			if err := u.dir(strings.TrimSuffix(f.Name, "/")); err != nil {
				return nil, err
			}
		case !mode.IsRegular():
			return nil, &ArchiveError{Entry: f.Name, Reason: "is a special entry; skill archives may hold only files and folders"}
		default:
			if f.UncompressedSize64 > uint64(lim.MaxFile) {
				return nil, &ArchiveError{Entry: f.Name, Reason: fmt.Sprintf("is larger than %d bytes", lim.MaxFile)}
			}
			rc, err := f.Open()
			if err != nil {
				return nil, &ArchiveError{Entry: f.Name, Reason: "could not be read: " + err.Error()}
			}
			err = u.file(f.Name, mode, int64(f.UncompressedSize64), rc)
			rc.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	return u.done()
}

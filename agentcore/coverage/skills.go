package coverage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// SkillIndexSchema is the $schema of the Agent Skills discovery index, version 0.2.0, that spec
// 9.4 pins. It is an opaque identifier: it is compared, never fetched.
const SkillIndexSchema = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"

// Skill types of the index (spec 9.4). Entries of other types are skipped.
const (
	SkillMD      = "skill-md"
	SkillArchive = "archive"
)

// Bounds of the index and of what a skill gives the model.
const (
	MaxSkills           = 100
	MaxSkillDescription = 1024 // characters (the Agent Skills format's bound)
	MaxSkillMDBytes     = 512 << 10
	MaxArchiveBytes     = 4 << 20
	// MaxSkillText is the most of one file's text a reply carries, in bytes.
	MaxSkillText = 64 << 10
)

var (
	skillNameRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)
	digestRE    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Skill is one usable entry of a Company's skill index (spec 9.4). URL is resolved against the
// final poppy.json URL; the Company's words (Name, Description) are content.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Type        string `json:"type"`
	URL         string `json:"url"`
	Digest      string `json:"digest"`
	Version     string `json:"version,omitempty"`
}

// SkillIndex is a Company's skill_index as Poppydesk uses it.
type SkillIndex struct {
	// Ignored says why the whole index is not used ("" when it is): absent, or a $schema other
	// than SkillIndexSchema. The rest of poppy.json stays usable.
	Ignored string    `json:"ignored,omitempty"`
	Skills  []Skill   `json:"skills"`
	Skipped []Skipped `json:"skipped,omitempty"`
}

// Skill returns the usable entry named name.
func (x *SkillIndex) Skill(name string) (Skill, bool) {
	for _, s := range x.Skills {
		if s.Name == name {
			return s, true
		}
	}
	return Skill{}, false
}

// ParseSkillIndex reads a skill_index (spec 9.4) embedded in the poppy.json served at base (the
// final URL after redirects). The index is used only with $schema SkillIndexSchema; unknown
// fields are ignored; entries of an unknown type, without every required field, with a digest
// not of the form sha256:<64 lowercase hex>, or whose url does not resolve (RFC 3986 §5) to an
// HTTPS URL are skipped and listed in Skipped.
func ParseSkillIndex(raw json.RawMessage, base string) *SkillIndex {
	out := &SkillIndex{Skills: []Skill{}}
	if len(bytes.TrimSpace(raw)) == 0 || isNull(raw) {
		out.Ignored = "the Company publishes no skill_index"
		return out
	}
	var idx map[string]json.RawMessage
	if json.Unmarshal(raw, &idx) != nil || idx == nil {
		out.Ignored = "skill_index is not a JSON object, so Poppydesk does not use it (spec 9.4)"
		return out
	}
	var schema string
	if json.Unmarshal(idx["$schema"], &schema) != nil || schema != SkillIndexSchema {
		out.Ignored = fmt.Sprintf("skill_index has $schema %s, not the identifier %s that spec 9.4 pins, so Poppydesk does not use it; the rest of poppy.json is used", quoteShort(schema), SkillIndexSchema)
		if schema == "" {
			out.Ignored = "skill_index has no $schema, so Poppydesk does not use it (spec 9.4); the rest of poppy.json is used"
		}
		return out
	}
	b, err := url.Parse(base)
	if err != nil || b.Scheme != "https" {
		out.Ignored = "the poppy.json URL to resolve skill URLs against is not an HTTPS URL"
		return out
	}
	var entries []json.RawMessage
	if json.Unmarshal(idx["skills"], &entries) != nil {
		out.Ignored = "skill_index has no skills list, so Poppydesk does not use it (spec 9.4)"
		return out
	}
	for i, e := range entries {
		at := fmt.Sprintf("skill_index.skills[%d]", i)
		if len(out.Skills) == MaxSkills {
			out.Skipped = append(out.Skipped, Skipped{What: at, Reason: fmt.Sprintf("more than %d skills; the rest are left out", MaxSkills)})
			break
		}
		s, why := parseSkill(e, b)
		if why == "" {
			if _, dup := out.Skill(s.Name); dup {
				why = "a skill of the same name is listed earlier"
			}
		}
		if why != "" {
			out.Skipped = append(out.Skipped, Skipped{What: at, Reason: why})
			continue
		}
		out.Skills = append(out.Skills, s)
	}
	return out
}

func parseSkill(raw json.RawMessage, base *url.URL) (Skill, string) {
	var f map[string]json.RawMessage
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return Skill{}, "the entry is not a JSON object"
	}
	str := func(k string) (string, bool) {
		var s string
		err := json.Unmarshal(f[k], &s)
		return s, err == nil
	}
	var s Skill
	var ok bool
	if s.Type, ok = str("type"); !ok {
		return Skill{}, "the entry has no type, which spec 9.4 requires"
	}
	if s.Type != SkillMD && s.Type != SkillArchive {
		return Skill{}, fmt.Sprintf("the skill type %s is not one Poppydesk knows (skill-md, archive), so the entry is skipped (spec 9.4)", quoteShort(s.Type))
	}
	for _, k := range []string{"name", "description", "url", "digest"} {
		if v, ok := str(k); !ok || strings.TrimSpace(v) == "" {
			return Skill{}, fmt.Sprintf("the entry has no %s, which spec 9.4 requires", k)
		}
	}
	s.Name, _ = str("name")
	s.Digest, _ = str("digest")
	desc, _ := str("description")
	ref, _ := str("url")
	if v, ok := str("version"); ok && utf8.RuneCountInString(v) <= 64 {
		s.Version = v
	}
	if !skillNameRE.MatchString(s.Name) {
		return Skill{}, fmt.Sprintf("the name %s is not an Agent Skills name (lower-case letters, digits and hyphens, at most 64)", quoteShort(s.Name))
	}
	text, cut := cleanText(desc, MaxSkillDescription)
	if cut || text == "" {
		return Skill{}, fmt.Sprintf("the description is empty or longer than %d characters", MaxSkillDescription)
	}
	s.Description = text
	if !digestRE.MatchString(s.Digest) {
		return Skill{}, "the digest is not sha256: followed by 64 lower-case hex characters (spec 9.4)"
	}
	r, err := url.Parse(ref)
	if err != nil {
		return Skill{}, fmt.Sprintf("the url %s is not a URL reference (RFC 3986)", quoteShort(ref))
	}
	resolved := base.ResolveReference(r)
	resolved.Fragment, resolved.RawFragment = "", ""
	if _, err := transport.CheckURL(resolved.String()); err != nil {
		return Skill{}, fmt.Sprintf("the url resolves to %s, which is not an HTTPS URL Poppydesk may fetch (spec 3, 9.4)", quoteShort(resolved.String()))
	}
	s.URL = resolved.String()
	return s, ""
}

// Skills reads the Company's skill index from its chosen poppy.json, resolving URLs against the
// final poppy.json URL after redirects (spec 9.4).
func (s *Service) Skills(co *discovery.Company) *SkillIndex {
	var raw json.RawMessage
	if co.Document != nil {
		raw = co.Document.SkillIndex
	}
	return ParseSkillIndex(raw, co.PoppyJSONURL)
}

// SkillFile is one file of a skill as the model may see it: its path, size and kind ("text",
// "script" or "binary"). Scripts are never run (spec 9.4).
type SkillFile struct {
	Path string `json:"path"`
	Size int    `json:"size"`
	Kind string `json:"kind"`
}

// SkillContent is a verified skill: its entry, the text of SKILL.md (or of the file asked for),
// and the files of an archive.
type SkillContent struct {
	Skill Skill
	// File is the path of the text given ("SKILL.md" unless another file was asked for).
	File string
	// Text is that file's text, cut at MaxSkillText bytes (Truncated).
	Text      string
	Truncated bool
	// Files lists an archive's files ("SKILL.md" alone for a skill-md).
	Files []SkillFile
}

// ReadSkill fetches the skill name of the Company's index without credentials or Session header
// (spec 3 rules, the RFC 9111 cache), checks the SHA-256 of its raw bytes against the digest
// (once more past the cache on a mismatch; otherwise CodeDigestMismatch and nothing is used),
// unpacks an archive in memory after the safety checks of [Extract] (CodeArchiveRefused), and
// returns the text of file ("" for SKILL.md). Nothing is written to disk or run.
func (s *Service) ReadSkill(ctx context.Context, co *discovery.Company, name, file string) (*SkillContent, error) {
	idx := s.Skills(co)
	if idx.Ignored != "" {
		return nil, errorf(CodeNotListed, "9.4", "", "%s", idx.Ignored)
	}
	sk, ok := idx.Skill(name)
	if !ok {
		var names []string
		for _, x := range idx.Skills {
			names = append(names, x.Name)
		}
		return nil, errorf(CodeSkillNotFound, "9.4", "", "the Company's skill index has no usable skill %s (usable: %s)", quoteShort(name), strings.Join(names, ", "))
	}
	accept, limit := "text/markdown, text/plain;q=0.9, */*;q=0.1", MaxSkillMDBytes
	if sk.Type == SkillArchive {
		accept, limit = "application/gzip, application/zip, application/octet-stream;q=0.5", MaxArchiveBytes
	}
	body, err := s.artifact(ctx, sk, accept, limit)
	if err != nil {
		return nil, err
	}
	var files []File
	if sk.Type == SkillArchive {
		if files, err = Extract(body, DefaultLimits); err != nil {
			return nil, &Error{Code: CodeArchiveRefused, Section: "9.4", URL: sk.URL, Detail: "the skill archive failed a safety check, so none of it is used", Err: err}
		}
	} else {
		if !utf8.Valid(body) {
			return nil, errorf(CodeInvalidDocument, "9.4", sk.URL, "the SKILL.md is not UTF-8 text, so it is not used")
		}
		files = []File{{Path: "SKILL.md", Mode: 0o644, Data: body}}
	}
	out := &SkillContent{Skill: sk, File: "SKILL.md"}
	for _, f := range files {
		out.Files = append(out.Files, SkillFile{Path: f.Path, Size: len(f.Data), Kind: fileKind(f)})
	}
	sort.Slice(out.Files, func(i, j int) bool { return out.Files[i].Path < out.Files[j].Path })
	if file != "" {
		out.File = path.Clean(strings.TrimPrefix(file, "./"))
	}
	for _, f := range files {
		if f.Path != out.File {
			continue
		}
		if fileKind(f) == "binary" {
			return nil, errorf(CodeSkillNotFound, "9.4", sk.URL, "%s is not a text file, so Poppydesk does not give it to the model", quoteShort(f.Path))
		}
		out.Text = string(f.Data)
		if len(out.Text) > MaxSkillText {
			cut := MaxSkillText
			for cut > 0 && !utf8.RuneStart(out.Text[cut]) {
				cut--
			}
			out.Text, out.Truncated = out.Text[:cut], true
		}
		return out, nil
	}
	return nil, errorf(CodeSkillNotFound, "9.4", sk.URL, "the skill has no file %s", quoteShort(out.File))
}

// artifact fetches a skill's artifact and checks its digest; a mismatch is fetched once more
// without the cached copy (the cache may hold an older artifact).
func (s *Service) artifact(ctx context.Context, sk Skill, accept string, limit int) ([]byte, error) {
	var last string
	for _, opts := range [][]discovery.Option{nil, {discovery.NoCache()}} {
		res, err := s.cfg.Engine.FetchPublic(ctx, sk.URL, accept, limit, opts...)
		if err != nil {
			return nil, &Error{Code: CodeFetchFailed, Section: "9.4, 3", URL: sk.URL, Detail: "Poppydesk could not fetch the skill", Err: err}
		}
		if res.Status != http.StatusOK {
			return nil, errorf(CodeFetchFailed, "9.4", sk.URL, "the skill answered HTTP %d instead of the artifact", res.Status)
		}
		sum := sha256.Sum256(res.Body)
		got := "sha256:" + hex.EncodeToString(sum[:])
		if got == sk.Digest {
			return res.Body, nil
		}
		last = got
	}
	return nil, errorf(CodeDigestMismatch, "9.4", sk.URL, "the artifact's SHA-256 is %s but the skill index says %s, so it may have been tampered with or be stale, and Poppydesk does not use it", last, sk.Digest)
}

// fileKind tells a skill's files apart for the model: a script (under scripts/, executable, a
// #! line, or a script's extension), text (UTF-8 without NUL), or binary.
func fileKind(f File) string {
	ext := strings.ToLower(path.Ext(f.Path))
	switch {
	case strings.HasPrefix(f.Path, "scripts/"), f.Mode&0o111 != 0, bytes.HasPrefix(f.Data, []byte("#!")),
		scriptExt[ext]:
		if !utf8.Valid(f.Data) || bytes.IndexByte(f.Data, 0) >= 0 {
			return "binary"
		}
		return "script"
	case utf8.Valid(f.Data) && bytes.IndexByte(f.Data, 0) < 0:
		return "text"
	}
	return "binary"
}

var scriptExt = map[string]bool{".sh": true, ".bash": true, ".zsh": true, ".py": true, ".js": true, ".mjs": true, ".ts": true,
	".rb": true, ".pl": true, ".php": true, ".ps1": true, ".bat": true, ".cmd": true, ".exe": true, ".bin": true}

// ErrArchive is matched by the *ArchiveError inside a CodeArchiveRefused error.
var ErrArchive = errors.New("coverage: skill archive refused")

// Is makes errors.Is(err, ErrArchive) true.
func (e *ArchiveError) Is(target error) bool { return target == ErrArchive }

package inspect

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// Level is how strongly the specification states a rule.
type Level string

// Levels of [Rule]. Only a MUST failure fails `poppydesk check`. NOTE marks a behaviour that is
// allowed but that the Personal Agent had to work around (a 429, a DPoP nonce, a dropped
// stream); the developer sees it, and a check that expects a quiet Company reports it.
const (
	MUST   Level = "MUST"
	SHOULD Level = "SHOULD"
	NOTE   Level = "NOTE"
)

// Rule is one rule of the specification, as the Inspector and `poppydesk check` report it.
type Rule struct {
	ID      string `json:"id"`
	Level   Level  `json:"level"`
	Section string `json:"section"` // "spec 3.1", "Operations 3", "RFC 9207 §2"
	Title   string `json:"title"`
	// Expected is what a conforming Company does; Fix says how to get there, in the Company
	// developer's terms.
	Expected string `json:"expected"`
	Fix      string `json:"fix"`
}

// Finding is a rule a Company broke, where and how.
type Finding struct {
	Rule     string    `json:"rule"`
	Level    Level     `json:"level"`
	Section  string    `json:"section"`
	Title    string    `json:"title"`
	Seen     string    `json:"seen"`
	Expected string    `json:"expected"`
	Fix      string    `json:"fix"`
	Company  string    `json:"company,omitempty"`
	URL      string    `json:"url,omitempty"`
	At       time.Time `json:"at,omitzero"`
	// Exchange is the exchange log ID of the exchange it was seen in (0: none).
	Exchange int64 `json:"exchange,omitempty"`
}

// String is one line: "MUST spec 3.1 organization.domain: seen …; fix: …".
func (f Finding) String() string {
	return fmt.Sprintf("%s %s %s: %s; expected: %s; fix: %s", f.Level, f.Section, f.Title, f.Seen, f.Expected, f.Fix)
}

// NewFinding is a finding of the rule id with what was seen. A fix given replaces the rule's
// general one with a specific one ("set organization.domain to shop.localhost:8443"). An
// unknown id is a programming error and yields a NOTE naming it.
func NewFinding(id, seen string, fix ...string) Finding {
	r, ok := ruleIndex[id]
	if !ok {
		r = Rule{ID: id, Level: NOTE, Section: "?", Title: id, Expected: "?", Fix: "?"}
	}
	f := Finding{Rule: r.ID, Level: r.Level, Section: r.Section, Title: r.Title, Seen: seen, Expected: r.Expected, Fix: r.Fix}
	if len(fix) > 0 && fix[0] != "" {
		f.Fix = fix[0]
	}
	return f
}

// RuleByID returns the rule with this ID.
func RuleByID(id string) (Rule, bool) { r, ok := ruleIndex[id]; return r, ok }

// Reporter receives findings noticed while Poppydesk works. The approval queue
// (agentcore/approvals) and any other package that refuses a Company's answer because it breaks
// a rule call it with a finding from [NewFinding]; the Host's [Log] implements it. It must be
// cheap and must not block.
type Reporter interface {
	Report(ctx context.Context, f Finding)
}

// ReporterFunc adapts a function to [Reporter].
type ReporterFunc func(ctx context.Context, f Finding)

// Report implements [Reporter].
func (fn ReporterFunc) Report(ctx context.Context, f Finding) { fn(ctx, f) }

// Discard is a Reporter that drops every finding.
var Discard Reporter = ReporterFunc(func(context.Context, Finding) {})

// FromCheckError is the finding of a failed discovery check (spec 3, 3.1–3.4).
func FromCheckError(ce *discovery.CheckError) Finding {
	id, ok := checkRules[ce.Check]
	if !ok {
		id = RuleDiscoveryFetch
	}
	seen := ce.Detail
	if ce.Err != nil {
		seen += ": " + ce.Err.Error()
	}
	f := NewFinding(id, seen)
	f.Section = "spec " + ce.Section
	f.URL = ce.URL
	if ce.Check == discovery.CheckOrganizationDomain && ce.URL != "" {
		if host := hostOf(ce.URL); host != "" {
			f.Fix = "set organization.domain to " + host + " in every document the Company serves"
		}
	}
	return f
}

func hostOf(raw string) string {
	s := strings.TrimPrefix(raw, "https://")
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(s, ":443")
}

// Log keeps the latest findings (a bounded window), newest last, and tells a listener of each.
// It implements [Reporter]. Safe for concurrent use.
type Log struct {
	mu       sync.Mutex
	max      int
	items    []Finding
	now      func() time.Time
	onChange func(Finding)
}

// NewLog keeps up to max findings (default 500).
func NewLog(max int, now func() time.Time) *Log {
	if max <= 0 {
		max = 500
	}
	if now == nil {
		now = time.Now
	}
	return &Log{max: max, now: now}
}

// OnChange sets the listener called after each finding is added.
func (l *Log) OnChange(fn func(Finding)) { l.mu.Lock(); l.onChange = fn; l.mu.Unlock() }

// Report implements [Reporter].
func (l *Log) Report(_ context.Context, f Finding) { l.Add(f) }

// Add records f (its time set when zero). The same rule seen again for the same exchange is
// kept once.
func (l *Log) Add(f Finding) {
	if f.At.IsZero() {
		f.At = l.now()
	}
	l.mu.Lock()
	for _, g := range l.items {
		if g.Rule == f.Rule && g.Exchange == f.Exchange && g.Seen == f.Seen && g.Company == f.Company {
			l.mu.Unlock()
			return
		}
	}
	l.items = append(l.items, f)
	if len(l.items) > l.max {
		l.items = append([]Finding(nil), l.items[len(l.items)-l.max:]...)
	}
	fn := l.onChange
	l.mu.Unlock()
	if fn != nil {
		fn(f)
	}
}

// List returns the findings, newest last.
func (l *Log) List() []Finding {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Finding(nil), l.items...)
}

// Rules returns the catalog, sorted by ID.
func Rules() []Rule {
	out := append([]Rule(nil), catalog...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

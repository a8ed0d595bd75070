package coverage

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
)

// Bounds of [Seen]: values and their bytes per Company, and Companies remembered (at most
// 128 × 64 KiB in all); the oldest go first.
const (
	DefaultSeenPerCompany = 2000
	SeenBytesPerCompany   = 64 << 10
	maxSeenCompanies      = 128
	minIdentifier         = 3
	maxIdentifier         = 128
)

// Seen remembers the identifiers that appeared in each Company's responses to Poppydesk's
// signed requests during this run (order numbers, item and account IDs, operation IDs), so that
// a feedback report never repeats them (spec 9.3: "without identifiers such as order numbers,
// account numbers, or names"). It holds at most a bounded number of values per Company, in
// memory only, bounded by count and by bytes. Safe for concurrent use.
type Seen struct {
	mu    sync.Mutex
	max   int
	by    map[string]*valueSet
	order []string // Companies, oldest first
}

type valueSet struct {
	order []string
	has   map[string]bool
	bytes int // of the values in order
}

// NewSeen returns an empty Seen keeping up to perCompany values for each Company (<= 0:
// DefaultSeenPerCompany).
func NewSeen(perCompany int) *Seen {
	if perCompany <= 0 {
		perCompany = DefaultSeenPerCompany
	}
	return &Seen{max: perCompany, by: map[string]*valueSet{}}
}

// Observe takes the identifiers out of one exchange of the engine's log (engine.Config.OnExchange):
// only a response to a signed request (one that carried the Session header) of a known Company
// counts, since public documents (descriptions, discovery) hold no identifier of the User.
func (s *Seen) Observe(e store.Exchange) {
	if s == nil || e.Company == "" || len(e.ResponseBody) == 0 || e.RequestHeaders.Get("Poppy-Session") == "" {
		return
	}
	s.Add(e.Company, IdentifiersIn(e.ResponseBody)...)
}

// Add remembers values as identifiers of company.
func (s *Seen) Add(company string, values ...string) {
	if s == nil || company == "" || len(values) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.by[company]
	if set == nil {
		if len(s.order) == maxSeenCompanies {
			delete(s.by, s.order[0])
			s.order = s.order[1:]
		}
		set = &valueSet{has: map[string]bool{}}
		s.by[company] = set
		s.order = append(s.order, company)
	}
	for _, v := range values {
		if set.has[v] {
			continue
		}
		for len(set.order) > 0 && (len(set.order) >= s.max || set.bytes+len(v) > SeenBytesPerCompany) {
			delete(set.has, set.order[0])
			set.bytes -= len(set.order[0])
			set.order[0] = ""
			set.order = set.order[1:]
		}
		// A copy: v is often a word of a much longer string of a response body, which keeping
		// v itself would keep whole, past the bound.
		v = strings.Clone(v)
		set.has[v] = true
		set.bytes += len(v)
		set.order = append(set.order, v)
	}
}

// Values returns the identifiers remembered for company.
func (s *Seen) Values(company string) []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if set := s.by[company]; set != nil {
		return append([]string(nil), set.order...)
	}
	return nil
}

// idToken is an identifier-shaped word in free text: letters, a separator, then letters and
// digits with at least one digit (ord_7Hk2, itm_4Qa, INV-20931), or six digits and more.
var idToken = regexp.MustCompile(`\b(?:[A-Za-z][A-Za-z0-9]{0,11}[_-][A-Za-z0-9]*[0-9][A-Za-z0-9]*|[0-9]{6,})\b`)

// IdentifiersIn lists the identifiers in a response body: in JSON (also the data lines of an
// event stream), every string or number under a key that names an identifier (id, *_id, *Id,
// number, reference) and every identifier-shaped word in other strings; in other text, the
// identifier-shaped words.
func IdentifiersIn(body []byte) []string {
	var out []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if n := utf8.RuneCountInString(v); n >= minIdentifier && n <= maxIdentifier && !strings.ContainsAny(v, "\n\r") {
			out = append(out, v)
		}
	}
	words := func(s string) {
		for _, m := range idToken.FindAllString(s, 64) {
			add(m)
		}
	}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case string:
			if x == redact.Mask {
				return
			}
			if idKey(key) {
				add(x)
			} else {
				words(x)
			}
		case json.Number:
			if idKey(key) {
				add(x.String())
			}
		}
	}
	parse := func(b []byte) bool {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return false
		}
		walk("", v)
		return true
	}
	if !parse(body) {
		stream := false
		for _, line := range bytes.Split(body, []byte("\n")) {
			if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok && parse(bytes.TrimSpace(d)) {
				stream = true
			}
		}
		if !stream && utf8.Valid(body) {
			words(string(body))
		}
	}
	return out
}

// idKey reports whether a JSON key names an identifier: id, *_id, *-id, fooId, fooID, *number,
// *reference, *_ref.
func idKey(k string) bool {
	l := strings.ToLower(k)
	switch {
	case l == "id", l == "number", l == "reference", l == "ref":
		return true
	case strings.HasSuffix(l, "_id"), strings.HasSuffix(l, "-id"), strings.HasSuffix(l, "number"), strings.HasSuffix(l, "reference"), strings.HasSuffix(l, "_ref"):
		return true
	case len(k) > 2 && strings.HasSuffix(l, "id"):
		r, _ := utf8.DecodeLastRuneInString(k[:len(k)-1])
		return unicode.IsUpper(r) // fooId, fooID
	}
	return false
}

// What [Scrub] removes, for the model's and the user's view.
const (
	RemovedSecret     = "secret"
	RemovedIdentifier = "identifier"
	RemovedAccount    = "account"
	RemovedEmail      = "email address"
	RemovedPhone      = "phone number"
)

// Replacements [Scrub] leaves in place of what it removes.
const (
	placeholderIdentifier = "[identifier removed]"
	placeholderAccount    = "[account removed]"
	placeholderEmail      = "[email removed]"
	placeholderPhone      = "[phone number removed]"
)

var (
	emailRE = regexp.MustCompile(`(?i)[a-z0-9.!#$%&'*+/=?^_{|}~-]+@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+`)
	// phoneRE is a run of digits with the separators phone numbers are written with; a match
	// counts only with 7 to 15 digits (E.164) and when it is not a date.
	phoneRE = regexp.MustCompile(`\+?\(?[0-9][0-9 ().\-/]{5,22}[0-9]`)
	dateRE  = regexp.MustCompile(`^[0-9]{4}[-/.][0-9]{1,2}[-/.][0-9]{1,2}$|^[0-9]{1,2}[-/.][0-9]{1,2}[-/.][0-9]{2,4}$`)
)

// Scrub removes from text what a feedback report must not carry (spec 9.3, 10.2): every secret
// Poppydesk holds (held: tokens, keys, User IDs of every account and Company, wherever they stand
// in the text, see store.HeldSecrets), secret-shaped values (agentcore/redact: JWT-shaped values
// and values of secret-named fields and parameters), the identifiers given (whole words, longest
// first), the account labels (ignoring case), email addresses and phone numbers. It returns the
// text and what kinds it removed, in order.
func Scrub(text string, held, identifiers, accounts []string) (string, []string) {
	var removed []string
	note := func(kind string) {
		for _, k := range removed {
			if k == kind {
				return
			}
		}
		removed = append(removed, kind)
	}
	if t := replaceAll(text, held, redact.Mask); t != text {
		text = t
		note(RemovedSecret)
	}
	if t := redact.Text(redact.String(text)); t != text {
		text = t
		note(RemovedSecret)
	}
	if t := replaceWords(text, accounts, true, placeholderAccount); t != text {
		text = t
		note(RemovedAccount)
	}
	if t := emailRE.ReplaceAllString(text, placeholderEmail); t != text {
		text = t
		note(RemovedEmail)
	}
	if t := replaceWords(text, identifiers, false, placeholderIdentifier); t != text {
		text = t
		note(RemovedIdentifier)
	}
	if t := phoneRE.ReplaceAllStringFunc(text, func(m string) string {
		digits := 0
		for _, r := range m {
			if r >= '0' && r <= '9' {
				digits++
			}
		}
		if digits < 7 || digits > 15 || dateRE.MatchString(strings.TrimSpace(m)) {
			return m
		}
		return placeholderPhone
	}); t != text {
		text = t
		note(RemovedPhone)
	}
	return text, removed
}

// replaceAll replaces every occurrence of the values in text, inside words too (longest first).
func replaceAll(text string, values []string, with string) string {
	vs := slices.Clone(values)
	sort.Slice(vs, func(i, j int) bool { return len(vs[i]) > len(vs[j]) })
	for _, v := range vs {
		if v != "" {
			text = strings.ReplaceAll(text, v, with)
		}
	}
	return text
}

// replaceWords replaces each whole-word occurrence of the values in text (longest first, so a
// value inside a longer one is not cut out of it).
func replaceWords(text string, values []string, foldCase bool, with string) string {
	vs := make([]string, 0, len(values))
	for _, v := range values {
		if v = strings.TrimSpace(v); utf8.RuneCountInString(v) >= minIdentifier {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return len(vs[i]) > len(vs[j]) })
	for _, v := range vs {
		text = replaceWord(text, v, foldCase, with)
	}
	return text
}

func replaceWord(text, v string, foldCase bool, with string) string {
	hay, needle := text, v
	if foldCase {
		hay, needle = strings.ToLower(text), strings.ToLower(v)
		if len(hay) != len(text) {
			// Lower-casing changed byte lengths (rare scripts): compare as written.
			hay, needle = text, v
		}
	}
	var b strings.Builder
	last := 0
	for i := 0; i <= len(hay)-len(needle); {
		j := strings.Index(hay[i:], needle)
		if j < 0 {
			break
		}
		start, end := i+j, i+j+len(needle)
		if !wordEdge(text, start, true) || !wordEdge(text, end, false) {
			i = start + 1
			continue
		}
		b.WriteString(text[last:start])
		b.WriteString(with)
		last, i = end, end
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// wordEdge reports whether position i of s is a word boundary on the given side.
func wordEdge(s string, i int, before bool) bool {
	var r rune
	if before {
		if i == 0 {
			return true
		}
		r, _ = utf8.DecodeLastRuneInString(s[:i])
	} else {
		if i == len(s) {
			return true
		}
		r, _ = utf8.DecodeRuneInString(s[i:])
	}
	return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_')
}

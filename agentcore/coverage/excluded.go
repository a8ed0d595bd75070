package coverage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// Bounds of the excluded-tasks document (spec 9.1): larger documents are refused; more tasks
// or longer phrases are left out and listed in Skipped.
const (
	MaxExcludedTasksBytes = 256 << 10
	MaxExcludedTasks      = 200
	MaxTaskPhrase         = 300 // characters
)

// Task is one task the Company chose not to offer through this protocol (spec 9.1), with the
// alternative it gives (nil when none, or when none is usable).
type Task struct {
	Task        string       `json:"task"`
	Alternative *Alternative `json:"alternative,omitempty"`
}

// ExcludedTasks is a Company's excluded-tasks document as Poppydesk uses it.
type ExcludedTasks struct {
	// Listed is false when poppy.json has no excluded_tasks (the other fields are then empty).
	Listed bool `json:"listed"`
	// URL is where the document came from, after redirects.
	URL     string    `json:"url,omitempty"`
	Tasks   []Task    `json:"tasks"`
	Skipped []Skipped `json:"skipped,omitempty"`
	// Stale is true when a CacheOnly read found a copy past its freshness lifetime.
	Stale bool `json:"-"`
}

// Lists returns the listed task whose phrase is the same as task once both are normalised
// ([TaskKey]). Whether a differently worded task is the same one is the model's judgment.
func (x *ExcludedTasks) Lists(task string) (Task, bool) {
	if x == nil {
		return Task{}, false
	}
	k := TaskKey(task)
	for _, t := range x.Tasks {
		if TaskKey(t.Task) == k {
			return t, true
		}
	}
	return Task{}, false
}

// TaskKey is a task phrase in the form Poppydesk compares: lower case, runs of space as one
// space, without surrounding space and final punctuation. "Close an account." and "close an
// account" have the same key.
func TaskKey(task string) string {
	k := strings.Join(strings.Fields(strings.ToLower(task)), " ")
	return strings.TrimRightFunc(k, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// ParseExcludedTasks reads an excluded-tasks document (spec 9.1) against the Company's apis
// (for the alternatives, spec 9.2). A body that is not a JSON object with a tasks list is an
// *Error (CodeInvalidDocument) and nothing of it is used; entries that break a rule are left out
// and listed in Skipped. Unknown fields are ignored.
func ParseExcludedTasks(body []byte, apis []discovery.API) (*ExcludedTasks, error) {
	var doc map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, errorf(CodeInvalidDocument, "9.1", "", "the excluded-tasks document is not a JSON object")
	}
	if dec.More() {
		return nil, errorf(CodeInvalidDocument, "9.1", "", "the excluded-tasks document has data after its JSON object")
	}
	var entries []json.RawMessage
	if raw, ok := doc["tasks"]; !ok || json.Unmarshal(raw, &entries) != nil || entries == nil {
		return nil, errorf(CodeInvalidDocument, "9.1", "", "the excluded-tasks document has no tasks list, which spec 9.1 requires")
	}
	out := &ExcludedTasks{Listed: true, Tasks: []Task{}}
	seen := map[string]bool{}
	for i, raw := range entries {
		at := fmt.Sprintf("tasks[%d]", i)
		if len(out.Tasks) == MaxExcludedTasks {
			out.Skipped = append(out.Skipped, Skipped{What: at, Reason: fmt.Sprintf("more than %d tasks; the rest are left out", MaxExcludedTasks)})
			break
		}
		var e map[string]json.RawMessage
		if json.Unmarshal(raw, &e) != nil || e == nil {
			out.Skipped = append(out.Skipped, Skipped{What: at, Reason: "the entry is not a JSON object, so it is left out"})
			continue
		}
		var phrase string
		if json.Unmarshal(e["task"], &phrase) != nil {
			out.Skipped = append(out.Skipped, Skipped{What: at, Reason: "the entry has no task phrase (a string), which spec 9.1 requires, so it is left out"})
			continue
		}
		phrase, cut := cleanText(phrase, MaxTaskPhrase)
		if phrase == "" || cut {
			out.Skipped = append(out.Skipped, Skipped{What: at + ".task", Reason: fmt.Sprintf("the task phrase is empty or longer than %d characters, so the entry is left out", MaxTaskPhrase)})
			continue
		}
		phrase = strings.Join(strings.Fields(phrase), " ")
		if seen[TaskKey(phrase)] {
			out.Skipped = append(out.Skipped, Skipped{What: at, Reason: "the same task is listed earlier; this entry is left out"})
			continue
		}
		seen[TaskKey(phrase)] = true
		t := Task{Task: phrase}
		if alt, ok := e["alternative"]; ok && !isNull(alt) {
			a, sk := ParseAlternative(alt, apis, at+".alternative")
			t.Alternative = a
			out.Skipped = append(out.Skipped, sk...)
		}
		out.Tasks = append(out.Tasks, t)
	}
	return out, nil
}

// ExcludedTasks fetches and reads the Company's excluded tasks (spec 9.1): a GET without token
// or Session header, under spec 3's HTTPS and address rules, through the engine's RFC 9111
// cache. The alternatives are checked without the network (ParseAlternative); [Service.Verify]
// checks their references against the Company's descriptions. A Company without excluded_tasks
// gives Listed false and no error. opts are discovery's (discovery.CacheOnly reads only the
// cache: a document not cached yet is an error matching discovery.ErrNotCached).
func (s *Service) ExcludedTasks(ctx context.Context, co *discovery.Company, opts ...discovery.Option) (*ExcludedTasks, error) {
	et := co.Channels.ExcludedTasks
	if et == nil || et.URL == "" {
		return &ExcludedTasks{Tasks: []Task{}}, nil
	}
	res, err := s.cfg.Engine.FetchPublic(ctx, et.URL, "application/json", MaxExcludedTasksBytes, opts...)
	if errors.Is(err, discovery.ErrNotCached) {
		return nil, err
	}
	if err != nil {
		return nil, &Error{Code: CodeFetchFailed, Section: "9.1, 3", URL: et.URL, Detail: "Poppydesk could not fetch the Company's excluded tasks", Err: err}
	}
	if res.Status != http.StatusOK {
		return nil, errorf(CodeFetchFailed, "9.1", et.URL, "the Company's excluded-tasks document answered HTTP %d instead of the document", res.Status)
	}
	x, err := ParseExcludedTasks(res.Body, co.Channels.APIs)
	if err != nil {
		err.(*Error).URL = res.FinalURL
		return nil, err
	}
	x.URL, x.Stale = res.FinalURL, res.Stale
	return x, nil
}

// Verify checks the openapi and mcp references of every alternative against the Company's own
// descriptions (spec 9.2): each API is asked once; references that are not confirmed, or cannot
// be checked, are left out and listed in Skipped, and an alternative left with nothing usable is
// dropped.
func (s *Service) Verify(ctx context.Context, co *discovery.Company, x *ExcludedTasks) {
	v := &verifier{l: s.lister, co: co, seen: map[string]listing{}}
	for i := range x.Tasks {
		a, sk := v.check(ctx, x.Tasks[i].Alternative, "the alternative of "+quoteShort(x.Tasks[i].Task))
		x.Tasks[i].Alternative = a
		x.Skipped = append(x.Skipped, sk...)
	}
}

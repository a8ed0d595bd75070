package conformance

// Task coverage probes (spec 9): the skill index's artifacts against their digests and the
// archive safety checks (9.4, agentcore/coverage's Extract), the excluded tasks' alternatives
// against poppy.json's apis (9.1, 9.2), and one feedback report (9.3, ActionFeedback). The
// documents and artifacts are fetched with a GET and nothing else: no token, no Session header.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

func (r *run) coverageProbes(ctx context.Context) {
	const (
		digest  = "coverage: skills match their digests"
		archive = "coverage: skill archives stay in their folder"
		altRef  = "coverage: alternatives reference listed APIs"
		altSay  = "coverage: alternatives have instructions or references"
	)
	alt := [][2]string{{altRef, inspect.RuleAlternativeReference}, {altSay, inspect.RuleAlternativeContent}}
	if why := r.need(false); why != "" {
		r.skipAll(why, append(alt, [2]string{digest, inspect.RuleSkillDigest}, [2]string{archive, inspect.RuleSkillArchive})...)
		return
	}
	r.skillProbes(ctx, digest, archive)
	r.alternativeProbe(ctx, alt)
}

func (r *run) skillProbes(ctx context.Context, digest, archive string) {
	idx := coverage.ParseSkillIndex(r.co.Document.SkillIndex, r.co.PoppyJSONURL)
	if idx.Ignored != "" || len(idx.Skills) == 0 {
		why := idx.Ignored
		if why == "" {
			why = "the skill index lists no skill of a known type"
		}
		r.skipAll(why, [2]string{digest, inspect.RuleSkillDigest}, [2]string{archive, inspect.RuleSkillArchive})
		return
	}
	var badDigest, badArchive, unread []string
	archives := 0
	for _, s := range idx.Skills {
		a := r.do(ctx, call{method: http.MethodGet, url: s.URL, accept: "*/*"})
		if a.status != http.StatusOK {
			unread = append(unread, fmt.Sprintf("%s at %s: %s", s.Name, s.URL, a.words()))
			continue
		}
		sum := sha256.Sum256(a.body)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != s.Digest {
			badDigest = append(badDigest, fmt.Sprintf("%s (%s) is served with SHA-256 %s, the index says %s", s.Name, s.URL, got, s.Digest))
			continue
		}
		if s.Type == coverage.SkillArchive {
			archives++
			if _, err := coverage.Extract(a.body, coverage.DefaultLimits); err != nil {
				var ae *coverage.ArchiveError
				if errors.As(err, &ae) {
					badArchive = append(badArchive, fmt.Sprintf("%s (%s): %s", s.Name, s.URL, err))
				}
			}
		}
	}
	note := ""
	if len(unread) > 0 {
		note = "; not read: " + strings.Join(unread, "; ")
	}
	r.check(digest, inspect.RuleSkillDigest, joinBad(badDigest, "a Personal Agent must not use an artifact that does not match its digest"+note),
		fmt.Sprintf("%d skill(s) fetched, each matches its digest%s", len(idx.Skills)-len(unread), note))
	switch {
	case len(badArchive) > 0:
		r.add(archive, inspect.RuleSkillArchive, Fail, strings.Join(badArchive, "; "))
	case archives == 0:
		r.add(archive, inspect.RuleSkillArchive, Skip, "the index lists no archive skill whose digest matches")
	default:
		r.add(archive, inspect.RuleSkillArchive, Pass, fmt.Sprintf("%d archive(s) pass the proposal's extraction checks", archives))
	}
}

func joinBad(bad []string, tail string) string {
	if len(bad) == 0 {
		return ""
	}
	return strings.Join(bad, "; ") + "; " + tail
}

// alternativeProbe reads the excluded tasks' alternatives (spec 9.1, 9.2): every openapi and
// mcp reference names an API poppy.json lists with that type (probes[0]), and every alternative
// has instructions or references (probes[1]); both are MUSTs of spec 9.2.
func (r *run) alternativeProbe(ctx context.Context, probes [][2]string) {
	x := r.co.Channels.ExcludedTasks
	if x == nil || x.URL == "" {
		r.skipAll("poppy.json lists no excluded_tasks", probes...)
		return
	}
	a := r.do(ctx, call{method: http.MethodGet, url: x.URL})
	if a.status != http.StatusOK {
		r.skipAll("the excluded tasks could not be read: "+a.words(), probes...)
		return
	}
	var doc struct {
		Tasks []struct {
			Task        string           `json:"task"`
			Alternative *json.RawMessage `json:"alternative"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(a.body, &doc); err != nil {
		r.skipAll("the excluded tasks document is not JSON: "+err.Error(), probes...)
		return
	}
	bad, empty, refs, alts := []string{}, []string{}, 0, 0
	for _, t := range doc.Tasks {
		if t.Alternative == nil || string(*t.Alternative) == "null" {
			continue
		}
		alts++
		for _, ref := range r.unlisted(*t.Alternative, &refs) {
			bad = append(bad, fmt.Sprintf("the alternative of %q names %s", trim(t.Task), ref))
		}
		var says struct {
			Instructions string            `json:"instructions"`
			References   []json.RawMessage `json:"references"`
		}
		if json.Unmarshal(*t.Alternative, &says) != nil || strings.TrimSpace(says.Instructions) == "" && len(says.References) == 0 {
			empty = append(empty, fmt.Sprintf("the alternative of %q is %s", trim(t.Task), trim(string(*t.Alternative))))
		}
	}
	r.check(probes[0][0], probes[0][1], joinBad(bad, "an openapi or mcp reference must be the url of an apis entry of that type in poppy.json"),
		fmt.Sprintf("%d openapi or mcp reference(s), each names a listed API", refs))
	r.check(probes[1][0], probes[1][1], joinBad(empty, "an alternative must have instructions or references, or both (spec 9.2)"),
		fmt.Sprintf("%d alternative(s), each with instructions or references", alts))
}

// unlisted returns the openapi and mcp references of an alternative whose url is no apis entry
// of their type (counting every such reference in n).
func (r *run) unlisted(raw json.RawMessage, n *int) []string {
	var alt struct {
		References []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"references"`
	}
	if json.Unmarshal(raw, &alt) != nil {
		return nil
	}
	var out []string
	for _, ref := range alt.References {
		if ref.Type != coverage.RefOpenAPI && ref.Type != coverage.RefMCP {
			continue
		}
		*n++
		listed := false
		for _, api := range r.co.Document.APIs {
			listed = listed || api.Type == ref.Type && api.URL == ref.URL
		}
		if !listed {
			out = append(out, fmt.Sprintf("the %s API %s, which poppy.json does not list", ref.Type, ref.URL))
		}
	}
	return out
}

// feedbackProbes sends one report (ActionFeedback): 202 is the answer spec 9.3 describes; 200
// with a valid alternative is allowed (NOTE), and a 429 with Retry-After is a rate limit (NOTE).
func (r *run) feedbackProbes(ctx context.Context) {
	const (
		answered = "coverage: feedback is accepted"
		limited  = "coverage: feedback is not rate-limited"
	)
	both := [][2]string{{answered, inspect.RuleFeedbackAlternative}, {limited, inspect.RuleFeedbackRateLimit}}
	why := r.need(true)
	switch {
	case why != "":
	case r.dlg == nil:
		why = "no delegation from the identity"
	case r.co.Channels.Feedback == nil || r.co.Channels.Feedback.Endpoint == "":
		why = "poppy.json lists no feedback endpoint"
	case !r.cfg.allows(ActionFeedback):
		why = "sending a feedback report is an action: allow it with --allow-actions " + ActionFeedback
	}
	if why != "" {
		r.skipAll(why, both...)
		return
	}
	body, _ := json.Marshal(map[string]string{"task": "Check the Company's feedback endpoint",
		"description": "This report comes from poppydesk check, a conformance check of the Company's side of the protocol run by its developer; it is not a task of a User."})
	ep := r.co.Channels.Feedback.Endpoint
	a := r.do(ctx, call{method: http.MethodPost, url: ep, body: body, contentType: "application/json", signed: true})
	switch {
	case a.status == http.StatusTooManyRequests:
		ra := a.header.Get("Retry-After")
		r.add(limited, inspect.RuleFeedbackRateLimit, Fail, fmt.Sprintf("the report got HTTP 429 after waiting Retry-After twice (Retry-After: %q)", ra))
		r.add(answered, inspect.RuleFeedbackAlternative, Skip, "the report was rate-limited")
		return
	case a.status == 0:
		r.skipAll("the feedback endpoint did not answer: "+errText(a.err), both...)
		return
	}
	r.add(limited, inspect.RuleFeedbackRateLimit, Pass, a.words())
	switch a.status {
	case http.StatusAccepted:
		r.add(answered, inspect.RuleFeedbackAlternative, Pass, "HTTP 202")
	case http.StatusOK:
		var refs int
		bad := r.unlisted(a.body, &refs)
		var alt map[string]json.RawMessage
		valid := json.Unmarshal(a.body, &alt) == nil && (alt["instructions"] != nil || alt["references"] != nil)
		ev := fmt.Sprintf("the report was answered 200 with an alternative (spec 9.3 allows it when the task can be done after all; a Personal Agent must accept it)")
		if !valid {
			ev += "; the body is not an alternative with instructions or references (spec 9.2)"
		}
		if len(bad) > 0 {
			ev += "; it names " + strings.Join(bad, ", ") + ", which Personal Agents ignore"
		}
		r.add(answered, inspect.RuleFeedbackAlternative, Fail, ev)
	default:
		r.add(answered, inspect.RuleFeedbackAlternative, Fail, "the report got "+a.words()+"; spec 9.3 answers 202 (or 200 with an alternative)")
	}
}

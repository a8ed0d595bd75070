package conformance

// The Operations extension v2 probes (signed in, ActionOperation, Config.Operation): the request
// without the extension must get no operation (Operations 2); with it, an operation whose
// summary keeps to the allowed formatting (3) and whose terms say what the request says (5);
// the changed request gets other terms under a new revision (3), a request for another action
// another operation (3); then one approval, retried as
// a Personal Agent does after a 503 or a lost response (7), is performed, never answered with a
// new revision (6), and sent once more it gets the same response (7). The Company performs the
// operation once.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/operations"
)

const (
	opsUndeclared = "operations: none to a request without the extension"
	opsSummary    = "operations: the summary keeps to the allowed formatting"
	opsTerms      = "operations: the terms say what the request says"
	opsChange     = "operations: a changed request gets a new revision"
	opsReused     = "operations: a revision names one set of terms"
	opsPerformed  = "operations: an approved request is performed"
	opsInProgress = "operations: performed promptly"
	opsLost       = "operations: the response arrives"
	opsOnce       = "operations: an approval sent twice performs once"
	opsMember     = "operations: an unknown member of Poppy-Approval is ignored"
	opsOther      = "operations: another action gets another operation"

	// unknownApprovalMember is a member of Poppy-Approval no version defines (Operations 6).
	unknownApprovalMember = "poppydesk_check=?1"

	// maxSummary is the longest summary a User can read before deciding, for this probe.
	maxSummary = 4 << 10
)

var opsProbes = [][2]string{{opsUndeclared, inspect.RuleOpsUndeclared}, {opsSummary, inspect.RuleOpsSummaryFormat},
	{opsTerms, inspect.RuleOpsTermsMatch}, {opsChange, inspect.RuleOpsRevisionOnChange}, {opsReused, inspect.RuleOpsReusedRevision},
	{opsOther, inspect.RuleOpsOtherAction},
	{opsPerformed, inspect.RuleOpsRevisionOnRetry}, {opsInProgress, inspect.RuleOpsInProgress}, {opsLost, inspect.RuleOpsLostResponse},
	{opsOnce, inspect.RuleOpsAtMostOnce}, {opsMember, inspect.RuleOpsApprovalMembers}} // opsMember last (operationProbes)

// listsOperations reports whether poppy.json lists the Operations extension version 2.
func (r *run) listsOperations() bool {
	for _, e := range r.co.Extensions["operations"] {
		if e.Version == operations.Version {
			return true
		}
	}
	return false
}

func (r *run) operationProbes(ctx context.Context) {
	why := ""
	op := r.cfg.Operation
	switch {
	case !r.cfg.allows(ActionOperation):
		why = "the operation probes perform an operation at the Company: allow it with --allow-actions " + ActionOperation + " (and name the request with --operation)"
	case r.needSignedIn() != "":
		why = r.needSignedIn()
	case op == nil:
		why = "name a request that returns an operation with --operation"
	case r.dlg == nil:
		why = "no delegation from the identity"
	}
	if why == "" {
		if u, err := url.Parse(op.URL); err != nil || u.Scheme != "https" || !r.companyHost(u.Host) {
			why = fmt.Sprintf("the --operation URL %s is not an HTTPS URL on the Company's own hosts", op.URL)
		}
	}
	if why != "" {
		r.skipAll(why, opsProbes...)
		return
	}
	send := func(body []byte, ext, approval string) answer {
		c := call{method: op.Method, url: op.URL, body: body, signed: true, token: true, extensions: ext, approval: approval}
		if body != nil {
			c.contentType = "application/json"
		}
		return r.do(ctx, c)
	}

	// Operations 2: no operation to a request that does not declare the extension.
	u := send(op.Body, "", "")
	if uop, ok, _ := operations.FromAPIResponse(u.status, u.body); ok {
		id := ""
		if uop != nil {
			id = " " + uop.OperationID
		}
		r.add(opsUndeclared, inspect.RuleOpsUndeclared, Fail, fmt.Sprintf("the request without Poppy-Extensions got HTTP %d approval_required with the operation%s; a Company returns operations only to requests that declare \"operations\";v=\"2\"", u.status, id))
	} else {
		ev := u.words()
		if u.status/100 == 2 {
			ev += " (the Company performed the request without the extension; it handles approval itself)"
		}
		r.add(opsUndeclared, inspect.RuleOpsUndeclared, Pass, ev)
	}
	rest := opsProbes[1:]
	if !r.listsOperations() {
		r.skipAll("poppy.json does not list the operations extension in version 2, so no request may declare it", rest...)
		return
	}
	ext := operations.ExtensionsHeader
	a := send(op.Body, ext, "")
	first, ok, err := operations.FromAPIResponse(a.status, a.body)
	if !ok || err != nil {
		why := "the --operation request with the extension got " + a.words() + ", not an operation (HTTP 403 approval_required)"
		switch {
		case err != nil:
			why = err.Error()
		case a.status/100 == 4:
			why += ": the signed-in account cannot ask for it now, perhaps because an earlier run of check performed it; name with --operation a request this account can still make, sign in with another account, or start the Company's test data afresh (the reference Company: restart `poppydesk company serve` without --state)"
		}
		r.skipAll(why, rest...)
		return
	}
	r.check(opsSummary, inspect.RuleOpsSummaryFormat, summaryProblems(first.Summary), fmt.Sprintf("%d characters of paragraphs, lists and emphasis", len(first.Summary)))
	r.check(opsTerms, inspect.RuleOpsTermsMatch, termsProblems(first, op, op.Body), "the terms agree with the request's fields and the summary")

	// Operations 3: the changed request gets other terms under a new revision.
	if op.Changed == nil {
		r.skipAll("the --operation request names no changed body", [2]string{opsChange, inspect.RuleOpsRevisionOnChange}, [2]string{opsReused, inspect.RuleOpsReusedRevision})
	} else {
		b := send(op.Changed, ext, "")
		second, ok, err := operations.FromAPIResponse(b.status, b.body)
		switch {
		case !ok || err != nil:
			r.skipAll("the changed request got "+b.words()+", not an operation", [2]string{opsChange, inspect.RuleOpsRevisionOnChange}, [2]string{opsReused, inspect.RuleOpsReusedRevision})
		case second.OperationID == first.OperationID && second.Revision == first.Revision && operations.Digest(second) != operations.Digest(first):
			r.add(opsReused, inspect.RuleOpsReusedRevision, Fail, fmt.Sprintf("the changed request got other terms under the same operation %s and revision %s: an approval of that revision could be applied to either set of terms", first.OperationID, first.Revision))
			r.add(opsChange, inspect.RuleOpsRevisionOnChange, Skip, "the revision was reused (see "+opsReused+")")
		case operations.Digest(second) == operations.Digest(first) && second.Revision == first.Revision:
			r.add(opsReused, inspect.RuleOpsReusedRevision, Pass, "no other terms came under the same revision")
			r.add(opsChange, inspect.RuleOpsRevisionOnChange, Fail, "the changed request got the same operation, revision and terms as the first: the approval would not say which request it covers")
		default:
			r.add(opsReused, inspect.RuleOpsReusedRevision, Pass, fmt.Sprintf("revision %s for the first request, %s for the changed one", first.Revision, second.Revision))
			r.add(opsChange, inspect.RuleOpsRevisionOnChange, Pass, "the changed request got other terms under a new revision")
		}
	}

	// Operations 3: a request for another action gets an operation of its own.
	if op.Other == nil {
		r.add(opsOther, inspect.RuleOpsOtherAction, Skip, `the --operation request names no "other" body (the same request for another action, such as another item)`)
	} else {
		o := send(op.Other, ext, "")
		other, ok, err := operations.FromAPIResponse(o.status, o.body)
		switch {
		case !ok || err != nil:
			r.add(opsOther, inspect.RuleOpsOtherAction, Skip, "the request for another action got "+o.words()+", not an operation: name in \"other\" a request this account can make")
		case other.OperationID == first.OperationID:
			r.add(opsOther, inspect.RuleOpsOtherAction, Fail, fmt.Sprintf("the request for another action got the operation %s of the first request: an approval of one could be taken for the other", first.OperationID))
		default:
			r.add(opsOther, inspect.RuleOpsOtherAction, Pass, fmt.Sprintf("operation %s for the first request, %s for another action", first.OperationID, other.OperationID))
		}
	}

	// The latest revision for the first request, then its approval (Operations 6, 7).
	a = send(op.Body, ext, "")
	latest, ok, err := operations.FromAPIResponse(a.status, a.body)
	if !ok || err != nil {
		r.skipAll("asking again for the first request got "+a.words()+", not an operation", rest[5:]...)
		return
	}
	approval, err := operations.ApprovalHeader(latest.OperationID, latest.Revision)
	if err != nil {
		r.skipAll("the operation's IDs cannot be sent in Poppy-Approval: "+err.Error(), rest[5:]...)
		return
	}
	// Operations 6: a member the Company does not know is ignored; the approval carries one
	// until the Company has answered it (then, if it was refused for it, the plain approval).
	sent, member := approval+", "+unknownApprovalMember, false
	var busy, lost []string
	var done answer
	for attempt := 0; ; attempt++ {
		if attempt == 6 {
			left := rest[5:]
			if member { // its result is in
				left = left[:len(left)-1]
			}
			r.skipAll(fmt.Sprintf("the approval was sent %d times without an answer that says how it went (%s)", attempt, done.words()), left...)
			return
		}
		done = send(op.Body, ext, sent)
		if !member && done.status != 0 && done.status != http.StatusServiceUnavailable {
			member = true
			if _, isOp, _ := operations.FromAPIResponse(done.status, done.body); done.status/100 == 4 && !isOp {
				r.addSaid(opsMember, inspect.RuleOpsApprovalMembers, Fail, fmt.Sprintf("the approval %s got %s; the same approval without the member %s is sent next: a Company ignores members of Poppy-Approval it does not know (Operations 6)", sent, done.words(), unknownApprovalMember), done.said())
				sent = approval
				continue
			}
			r.addSaid(opsMember, inspect.RuleOpsApprovalMembers, Pass, "an approval with the unknown member "+unknownApprovalMember+" got "+done.words(), done.said())
			sent = approval
		}
		if done.status == http.StatusServiceUnavailable {
			ra := done.header.Get("Retry-After")
			busy = append(busy, fmt.Sprintf("HTTP 503 (Retry-After: %q)", ra))
			if r.cfg.Sleep(ctx, retryAfter(ra)) != nil {
				return
			}
			continue
		}
		if done.status == 0 {
			lost = append(lost, errText(done.err))
			if r.cfg.Sleep(ctx, time.Second) != nil {
				return
			}
			continue
		}
		break
	}
	if len(busy) > 0 {
		r.add(opsInProgress, inspect.RuleOpsInProgress, Fail, fmt.Sprintf("the approved request got %s while being performed, and was sent again with the same approval", strings.Join(busy, ", ")))
	} else {
		r.add(opsInProgress, inspect.RuleOpsInProgress, Pass, "no 503 while performing")
	}
	if len(lost) > 0 {
		r.add(opsLost, inspect.RuleOpsLostResponse, Fail, fmt.Sprintf("the response to the approved request did not arrive (%s); the request was sent again with the same approval", trim(lost[0])))
	} else {
		r.add(opsLost, inspect.RuleOpsLostResponse, Pass, "every response arrived")
	}
	if again, ok, _ := operations.FromAPIResponse(done.status, done.body); ok {
		rev := ""
		if again != nil {
			rev = again.Revision
		}
		r.add(opsPerformed, inspect.RuleOpsRevisionOnRetry, Fail, fmt.Sprintf("the request with a valid approval of the latest revision %s got a new revision %s instead of being performed; a Personal Agent cannot tell whether it was performed and must not ask the User again", latest.Revision, rev))
		r.add(opsOnce, inspect.RuleOpsAtMostOnce, Skip, "the approval was not performed")
		return
	}
	if done.status/100 != 2 {
		r.add(opsPerformed, inspect.RuleOpsRevisionOnRetry, Skip, "the approved request got "+done.words())
		r.add(opsOnce, inspect.RuleOpsAtMostOnce, Skip, "the approval was not performed")
		return
	}
	r.add(opsPerformed, inspect.RuleOpsRevisionOnRetry, Pass, "performed: "+done.words())
	twice := send(op.Body, ext, approval)
	switch {
	case twice.status/100 == 2 && sameJSON(twice.body, done.body):
		r.add(opsOnce, inspect.RuleOpsAtMostOnce, Pass, "the same approval again got the first response")
	case twice.status/100 == 2:
		r.add(opsOnce, inspect.RuleOpsAtMostOnce, Fail, fmt.Sprintf("the same approval sent again got HTTP %d with another body than the first response (%s, first: %s): it must get the first response, or one that says the same; a different answer suggests the operation was performed again", twice.status, trim(string(twice.body)), trim(string(done.body))))
	default:
		r.add(opsOnce, inspect.RuleOpsAtMostOnce, Fail, fmt.Sprintf("the same approval sent again got %s, not the first response (HTTP %d): a Personal Agent that retries after a lost response would report a failure for an action that was performed", twice.words(), done.status))
	}
}

func retryAfter(v string) time.Duration {
	var n int
	if _, err := fmt.Sscan(v, &n); err == nil && n >= 0 {
		return time.Duration(min(n, 10)) * time.Second
	}
	return time.Second
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// summaryProblems says what of a summary is outside the allowed formatting (Operations 3
// "Formatting": paragraphs, lists, emphasis and strong emphasis), "" when nothing is.
func summaryProblems(summary string) string {
	s := operations.RenderSummary(summary)
	var literal []string
	var walk func(bs []operations.Block)
	walk = func(bs []operations.Block) {
		for _, b := range bs {
			if b.Kind == operations.BlockLiteral {
				literal = append(literal, "a block other than a paragraph or list ("+firstWords(b.Inlines)+")")
			}
			for _, in := range b.Inlines {
				if in.Literal {
					literal = append(literal, trim(in.Text))
				}
			}
			for _, it := range b.Items {
				walk(it.Blocks)
			}
		}
	}
	walk(s.Blocks)
	var out []string
	if len(literal) > 0 {
		if len(literal) > 4 {
			literal = append(literal[:4], fmt.Sprintf("%d more", len(literal)-4))
		}
		out = append(out, "links, images, raw HTML or code that a Personal Agent shows as text: "+strings.Join(literal, "; "))
	}
	for _, w := range s.Warnings {
		out = append(out, w.Message)
	}
	if len(summary) > maxSummary {
		out = append(out, fmt.Sprintf("it is %d bytes long; a User must be able to decide from it alone", len(summary)))
	}
	return strings.Join(out, "; ")
}

func firstWords(in []operations.Inline) string {
	var b strings.Builder
	for _, x := range in {
		b.WriteString(x.Text)
	}
	return trim(b.String())
}

// termsProblems says where the terms differ from the request or the summary (Operations 5).
func termsProblems(op *operations.Operation, req *OperationRequest, body []byte) string {
	u, err := url.Parse(req.URL)
	if err != nil {
		return ""
	}
	var out []string
	for _, w := range operations.CheckTerms(op, operations.RequestFacts{Method: req.Method, Path: u.Path, Query: u.Query(), Body: body}) {
		if w.Code == operations.WarnTermDiffers || w.Code == operations.WarnAmountNotInSumary {
			out = append(out, w.Message)
		}
	}
	return strings.Join(out, " ")
}

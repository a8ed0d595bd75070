package coverage_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/coverage"
	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

func task(t *testing.T, x *coverage.ExcludedTasks, phrase string) coverage.Task {
	t.Helper()
	tk, ok := x.Lists(phrase)
	if !ok {
		t.Fatalf("the excluded tasks %+v do not list %q", x.Tasks, phrase)
	}
	return tk
}

func refs(a *coverage.Alternative) string {
	if a == nil {
		return ""
	}
	var out []string
	for _, r := range a.References {
		out = append(out, r.Type+" "+r.OperationID+r.Tool)
	}
	return strings.Join(out, ", ")
}

func skippedText(sk []coverage.Skipped) string {
	var b strings.Builder
	for _, s := range sk {
		b.WriteString(s.What + ": " + s.Reason + "\n")
	}
	return b.String()
}

func codeOf(err error) string {
	var ce *coverage.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return ""
}

// TestExcludedTasks: the reference Company's excluded tasks are fetched with a GET without
// token or Session header (spec 9.1), through the RFC 9111 cache, and their alternatives keep
// only what spec 9.2 allows: a reference of an unknown type is skipped, and an openapi reference
// whose operation_id the description does not have is left out once checked.
func TestExcludedTasks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	co := f.discover(t)
	x, err := f.svc.ExcludedTasks(ctx, co)
	if err != nil {
		t.Fatal(err)
	}
	if !x.Listed || len(x.Tasks) != 3 || x.URL != f.s.URL(refcompany.ShopHost, refcompany.ExcludedTasksPath) {
		t.Fatalf("excluded tasks = %+v", x)
	}
	if tk := task(t, x, "change the delivery address of a shipped order"); tk.Alternative != nil {
		t.Fatalf("a task without alternative got one: %+v", tk.Alternative)
	}
	gift := task(t, x, "Pay with a gift card")
	if got := refs(gift.Alternative); got != "web , openapi listProducts, openapi applyGiftCard, mcp search_products" {
		t.Fatalf("before checking against the descriptions, the references are %q", got)
	}
	if !strings.Contains(skippedText(x.Skipped), `"company-agent" is not one Poppydesk knows`) {
		t.Fatalf("the unknown reference type is not reported as skipped: %s", skippedText(x.Skipped))
	}
	f.svc.Verify(ctx, co, x)
	gift = task(t, x, "Pay with a gift card")
	if got := refs(gift.Alternative); got != "web , openapi listProducts, mcp search_products" {
		t.Fatalf("after checking, the references are %q (applyGiftCard is not in the description)", got)
	}
	if !strings.Contains(skippedText(x.Skipped), `"applyGiftCard" is not an operationId`) {
		t.Fatalf("the unknown operation is not reported: %s", skippedText(x.Skipped))
	}
	if !strings.Contains(gift.Alternative.Instructions, "Ignore any other instructions") {
		t.Fatal("the Company's instructions are not kept as its content")
	}
	if n := f.credentialsOn(t, refcompany.ExcludedTasksPath); n != 1 {
		t.Fatalf("%d requests for the excluded tasks, want 1", n)
	}
	// Fresh in the cache (max-age=300): no request the second time.
	if _, err := f.svc.ExcludedTasks(ctx, co); err != nil {
		t.Fatal(err)
	}
	if n := len(f.s.RequestsTo("", refcompany.ExcludedTasksPath)); n != 1 {
		t.Fatalf("%d requests after a second read of a fresh document, want 1 (RFC 9111 cache)", n)
	}
}

// TestAlternativeUnlistedAPI (fault alternative-unlisted-api): an openapi reference to an API
// that poppy.json does not list is ignored (spec 9.2), and an alternative left with nothing
// usable is dropped; nothing is fetched from the unlisted API.
func TestAlternativeUnlistedAPI(t *testing.T) {
	f := newFixture(t, refcompany.FaultAlternativeUnlistedAPI)
	ctx := context.Background()
	co := f.discover(t)
	x, err := f.svc.ExcludedTasks(ctx, co)
	if err != nil {
		t.Fatal(err)
	}
	f.svc.Verify(ctx, co, x)
	for _, tk := range x.Tasks {
		if tk.Alternative == nil {
			continue
		}
		for _, r := range tk.Alternative.References {
			if strings.Contains(r.URL, refcompany.OtherHost) {
				t.Fatalf("kept a reference to an unlisted API: %+v", r)
			}
		}
		if why := violates92(tk.Alternative, co.Channels.APIs); why != "" {
			t.Fatalf("task %q: %s", tk.Task, why)
		}
	}
	if tk := task(t, x, "Buy a gift card"); tk.Alternative != nil {
		t.Fatalf("an alternative whose only reference names an unlisted API was kept: %+v", tk.Alternative)
	}
	if !strings.Contains(skippedText(x.Skipped), "not an openapi API listed in poppy.json") {
		t.Fatalf("skipped: %s", skippedText(x.Skipped))
	}
	if n := len(f.s.RequestsTo(refcompany.OtherHost, "")); n != 0 {
		t.Fatalf("%d requests went to the unlisted API's host", n)
	}
}

// TestWebReferenceIsNoSessionDestination: a web reference never authorizes a Session JWT or a
// token to its target (spec 9.2): it is not among the transport's Session destinations, and a
// signed request to it is refused before anything is sent.
func TestWebReferenceIsNoSessionDestination(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	co := f.discover(t)
	x, err := f.svc.ExcludedTasks(ctx, co)
	if err != nil {
		t.Fatal(err)
	}
	dest, err := co.SessionDestinations()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := f.e.Client(ctx, co.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	webs := 0
	for _, tk := range x.Tasks {
		if tk.Alternative == nil {
			continue
		}
		for _, r := range tk.Alternative.References {
			if r.Type != coverage.RefWeb {
				continue
			}
			webs++
			u, _ := url.Parse(r.URL)
			if dest.Allows(u) {
				t.Fatalf("the web reference %s is a Session destination", r.URL)
			}
			f.s.ResetRequests()
			_, err := cl.Do(ctx, &transport.Request{Method: http.MethodGet, URL: r.URL, AccessToken: "tok"})
			if !errors.Is(err, transport.ErrNotSessionDestination) || len(f.s.Requests()) != 0 {
				t.Fatalf("a signed request to the web reference %s: %v, %d requests reached the Company", r.URL, err, len(f.s.Requests()))
			}
		}
	}
	if webs < 2 {
		t.Fatalf("the reference Company's alternatives have %d web references, want at least 2", webs)
	}
}

// TestExcludedTasksRefused: a document that is not JSON, an error status and a redirect to
// http are refused with a clear error, and nothing of them is used (spec 9.1, 3).
func TestExcludedTasksRefused(t *testing.T) {
	tests := []struct {
		name, path, code string
	}{
		{"HTML instead of the document", "/", coverage.CodeInvalidDocument},
		{"HTTP 404", "/poppy/no-such-document.json", coverage.CodeFetchFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.s.EditPoppyJSON(func(doc map[string]any) { doc["excluded_tasks"] = map[string]any{"url": f.s.Origin() + tc.path} })
			co := f.discover(t)
			x, err := f.svc.ExcludedTasks(context.Background(), co)
			if codeOf(err) != tc.code || x != nil {
				t.Fatalf("ExcludedTasks = %+v, %v; want %s", x, err, tc.code)
			}
		})
	}
	// spec 3: a redirect of a public document goes to HTTPS only, so the fetch fails.
	f := newFixture(t)
	co := f.discover(t)
	co2 := *co
	co2.Channels.ExcludedTasks = &discovery.ExcludedTasks{URL: "http://" + f.s.Domain + refcompany.ExcludedTasksPath}
	if _, err := f.svc.ExcludedTasks(context.Background(), &co2); codeOf(err) != coverage.CodeFetchFailed || !errors.Is(err, transport.ErrNotHTTPS) {
		t.Fatalf("an http excluded_tasks url: %v", err)
	}
}

// TestFeedback: a report is sent once, with the Session header, to the feedback endpoint (spec
// 9.3): 202 is accepted and recorded; the same task again, a task the Company lists as excluded,
// a report that is too long and a report while reports are off are not sent at all.
func TestFeedback(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	co := f.discover(t)
	r := coverage.Report{Task: "Pay with store credit", Description: "The user wanted to pay for a new order with store credit; neither the API nor the Company Agent offers it."}
	sent, err := f.svc.Report(ctx, co, r)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Status != store.FeedbackAccepted || sent.Task != r.Task || sent.Description != r.Description || len(sent.Removed) != 0 {
		t.Fatalf("sent = %+v", sent)
	}
	got := f.s.FeedbackReports()
	if len(got) != 1 || got[0].Task != r.Task || got[0].SID == "" || got[0].SignedIn {
		t.Fatalf("the Company received %+v; want one report in a verified signed-out Session", got)
	}
	req := f.s.RequestsTo(refcompany.ShopHost, refcompany.FeedbackPath)
	if len(req) != 1 || req[0].Method != http.MethodPost || req[0].Header.Get("Poppy-Session") == "" || req[0].Header.Get("Poppy-Version") != "0.4" ||
		req[0].Header.Get("Authorization") != "" || req[0].Header.Get("Content-Type") != "application/json" {
		t.Fatalf("the report request was %+v", req)
	}
	rec, err := f.reports.GetFeedbackReport(ctx, co.Identifier, coverage.TaskKey(r.Task))
	if err != nil || rec.Status != store.FeedbackAccepted || rec.Description != r.Description || rec.Answered.IsZero() {
		t.Fatalf("recorded %+v, %v", rec, err)
	}

	notSent := []struct {
		name string
		r    coverage.Report
		code string
	}{
		{"the same task, worded with other case", coverage.Report{Task: "pay with store credit.", Description: "Another attempt."}, coverage.CodeAlreadyReported},
		{"a task the Company lists as excluded", coverage.Report{Task: "Close an account", Description: "The user wanted to close the account."}, coverage.CodeTaskExcluded},
		{"task too long", coverage.Report{Task: strings.Repeat("t", coverage.MaxReportTask+1), Description: "d"}, coverage.CodeInvalidReport},
		{"description too long", coverage.Report{Task: "Pay by cheque", Description: strings.Repeat("é", coverage.MaxReportDescription+1)}, coverage.CodeInvalidReport},
		{"no description", coverage.Report{Task: "Pay by cheque", Description: "  "}, coverage.CodeInvalidReport},
	}
	for _, tc := range notSent {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.svc.Report(ctx, co, tc.r)
			if codeOf(err) != tc.code {
				t.Fatalf("Report = %v, want %s", err, tc.code)
			}
			if n := len(f.s.RequestsTo(refcompany.ShopHost, refcompany.FeedbackPath)); n != 1 {
				t.Fatalf("%d reports reached the Company, want still 1", n)
			}
		})
	}
	t.Run("reports off", func(t *testing.T) {
		if err := f.svc.SetReportsEnabled(ctx, false); err != nil {
			t.Fatal(err)
		}
		defer f.svc.SetReportsEnabled(ctx, true)
		if _, err := f.svc.Report(ctx, co, coverage.Report{Task: "Pay by cheque", Description: "d"}); codeOf(err) != coverage.CodeReportsOff {
			t.Fatalf("Report while off = %v", err)
		}
		if n := len(f.s.FeedbackReports()); n != 1 {
			t.Fatalf("%d reports reached the Company", n)
		}
	})
}

// TestFeedbackScrubbed: the identifiers of this Company's responses in this run, the account
// label, email addresses, phone numbers and secrets never reach the Company in a report (spec
// 9.3, 10.2).
func TestFeedbackScrubbed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	co := f.discover(t)
	f.s.AddAccessToken("tok-orders", f.s.URL(refcompany.AgentHost, "/agent.json"), "orders:read")
	cl, err := f.e.Client(ctx, co.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Do(ctx, &transport.Request{Method: http.MethodGet, URL: f.s.URL(refcompany.ShopHost, "/api/orders"), AccessToken: "tok-orders"})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) // the exchange log keeps what was read of a body
	resp.Body.Close()
	jwt := "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlc2lnbmF0dXJl"
	r := coverage.Report{Task: "Return item itm_4Qa",
		Description: "Alice.Smith (alice@mail.example, +1 415 555 0100) wanted to return item itm_4Qa of order ord_7Hk2 and give a gift card; header " + jwt}
	sent, err := f.svc.Report(ctx, co, r)
	if err != nil {
		t.Fatal(err)
	}
	got := f.s.FeedbackReports()
	if len(got) != 1 {
		t.Fatalf("the Company received %d reports", len(got))
	}
	for _, secret := range []string{"itm_4Qa", "ord_7Hk2", "Alice.Smith", "alice@mail.example", "555 0100", jwt} {
		if strings.Contains(string(got[0].Body), secret) || strings.Contains(sent.Description+sent.Task, secret) {
			t.Errorf("the report carried %q: %s", secret, got[0].Body)
		}
	}
	if !strings.Contains(got[0].Description, "gift card") || got[0].Task != "Return item [identifier removed]" {
		t.Fatalf("the report lost its meaning: %+v", got[0])
	}
	if strings.Join(sent.Removed, ",") != "identifier,secret,account,email address,phone number" {
		t.Fatalf("Removed = %v", sent.Removed)
	}
}

// TestFeedbackAlternative (fault feedback-alternative): the Company answers 200 with an
// alternative (spec 9.3), which is kept under the rules of 9.2: the reference to an unlisted API
// is ignored.
func TestFeedbackAlternative(t *testing.T) {
	f := newFixture(t, refcompany.FaultFeedbackAlternative)
	ctx := context.Background()
	co := f.discover(t)
	sent, err := f.svc.Report(ctx, co, coverage.Report{Task: "Pay with a voucher", Description: "The checkout has no voucher field."})
	if err != nil {
		t.Fatal(err)
	}
	if sent.Status != store.FeedbackAlternative || sent.Alternative == nil || refs(sent.Alternative) != "web , openapi listProducts" {
		t.Fatalf("sent = %+v (%s)", sent, skippedText(sent.Skipped))
	}
	if why := violates92(sent.Alternative, co.Channels.APIs); why != "" {
		t.Fatal(why)
	}
	if !strings.Contains(skippedText(sent.Skipped), "not an openapi API listed") {
		t.Fatalf("skipped: %s", skippedText(sent.Skipped))
	}
	if rec, _ := f.reports.GetFeedbackReport(ctx, co.Identifier, coverage.TaskKey("Pay with a voucher")); rec.Status != store.FeedbackAlternative {
		t.Fatalf("recorded %+v", rec)
	}
}

// TestFeedback429 (fault feedback-429): the transport waits at least Retry-After before sending
// again (spec 5.6); when the Company keeps refusing, the report is not recorded as sent, nothing
// is sent to it again before Retry-After has passed, and later the report goes through.
func TestFeedback429(t *testing.T) {
	f := newFixture(t, refcompany.FaultFeedback429)
	ctx := context.Background()
	co := f.discover(t)
	r := coverage.Report{Task: "Pay with a voucher", Description: "The checkout has no voucher field."}
	_, err := f.svc.Report(ctx, co, r)
	var pe *transport.ProtocolError
	if !errors.As(err, &pe) || pe.Status != http.StatusTooManyRequests {
		t.Fatalf("Report = %v, want the 429", err)
	}
	n := len(f.s.RequestsTo(refcompany.ShopHost, refcompany.FeedbackPath))
	f.mu.Lock()
	waits := append([]time.Duration(nil), f.waits...)
	f.mu.Unlock()
	if n < 2 || len(waits) != n-1 {
		t.Fatalf("%d requests and waits %v", n, waits)
	}
	for _, w := range waits {
		if w < time.Second {
			t.Fatalf("waited %s before sending again; Retry-After said 1 s", w)
		}
	}
	if _, err := f.reports.GetFeedbackReport(ctx, co.Identifier, coverage.TaskKey(r.Task)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a report the Company refused stays recorded: %v", err)
	}
	_, err = f.svc.Report(ctx, co, r)
	var ce *coverage.Error
	if !errors.As(err, &ce) || ce.Code != coverage.CodeRateLimited || ce.RetryAfterSeconds < 1 {
		t.Fatalf("an immediate second report = %v, want CodeRateLimited", err)
	}
	if m := len(f.s.RequestsTo(refcompany.ShopHost, refcompany.FeedbackPath)); m != n {
		t.Fatalf("a report was sent before Retry-After passed (%d requests, had %d)", m, n)
	}
	f.s.SetFault(refcompany.FaultFeedback429, false)
	f.clock.Advance(2 * time.Second)
	if sent, err := f.svc.Report(ctx, co, r); err != nil || sent.Status != store.FeedbackAccepted {
		t.Fatalf("after Retry-After: %+v, %v", sent, err)
	}
}

// TestSkills: the skill index is read with the 0.2.0 $schema; urls resolve against the final
// poppy.json URL; an unknown type is skipped; each artifact is fetched without credentials or
// Session header, checked against its digest, and an archive unpacked in memory; a script is
// listed and given as text, never run (spec 9.4).
func TestSkills(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// Discovered through www, which redirects: URLs resolve against the final URL.
	www := strings.Replace(f.s.Domain, refcompany.ShopHost, refcompany.WWWHost, 1)
	co, err := f.e.Discover(ctx, www)
	if err != nil {
		t.Fatal(err)
	}
	idx := f.svc.Skills(co)
	want := map[string]string{
		"exchange-an-item": f.s.URL(refcompany.ShopHost, refcompany.SkillMDPath),
		"return-an-item":   f.s.URL(refcompany.ShopHost, refcompany.SkillArchivePath),
		"size-guide":       f.s.URL(refcompany.ShopHost, refcompany.SkillZipPath),
	}
	if idx.Ignored != "" || len(idx.Skills) != len(want) {
		t.Fatalf("index = %+v", idx)
	}
	for _, s := range idx.Skills {
		if want[s.Name] != s.URL {
			t.Errorf("%s resolved to %s, want %s", s.Name, s.URL, want[s.Name])
		}
	}
	if !strings.Contains(skippedText(idx.Skipped), `"mcp-bundle" is not one Poppydesk knows`) {
		t.Fatalf("skipped: %s", skippedText(idx.Skipped))
	}
	dest, _ := co.SessionDestinations()
	for _, s := range idx.Skills {
		if u, _ := url.Parse(s.URL); dest.Allows(u) {
			t.Errorf("the skill artifact %s is a Session destination", s.URL)
		}
	}

	md, err := f.svc.ReadSkill(ctx, co, "exchange-an-item", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.Text, "# Exchange an item") || len(md.Files) != 1 {
		t.Fatalf("SKILL.md = %+v", md)
	}
	arch, err := f.svc.ReadSkill(ctx, co, "return-an-item", "")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, fl := range arch.Files {
		kinds[fl.Path] = fl.Kind
	}
	if kinds["SKILL.md"] != "text" || kinds["references/RETURN-POLICY.md"] != "text" || kinds["scripts/print-label.sh"] != "script" || !strings.Contains(arch.Text, "# Return an item") {
		t.Fatalf("archive = %+v", arch)
	}
	script, err := f.svc.ReadSkill(ctx, co, "return-an-item", "scripts/print-label.sh")
	if err != nil || !strings.HasPrefix(script.Text, "#!/bin/sh") {
		t.Fatalf("the script as text = %+v, %v", script, err)
	}
	zipped, err := f.svc.ReadSkill(ctx, co, "size-guide", "references/sizes.md")
	if err != nil || !strings.Contains(zipped.Text, "| M | 96-101 |") {
		t.Fatalf("the zip skill's reference = %+v, %v", zipped, err)
	}
	if _, err := os.Stat(f.s.SkillScriptMarker()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the skill's script ran: %s exists (%v)", f.s.SkillScriptMarker(), err)
	}
	for _, p := range []string{refcompany.SkillMDPath, refcompany.SkillArchivePath, refcompany.SkillZipPath} {
		if n := f.credentialsOn(t, p); n != 1 {
			t.Errorf("%d requests for %s, want 1 (a fresh artifact is read from the cache)", n, p)
		}
	}
	if n := len(f.s.RequestsTo(refcompany.WWWHost, "/skills/return-an-item.tar.gz")); n != 0 {
		t.Fatal("a skill url was resolved against the URL before the redirect")
	}
	if _, err := f.svc.ReadSkill(ctx, co, "gift-wrap", ""); codeOf(err) != coverage.CodeSkillNotFound {
		t.Fatalf("a skill of an unknown type: %v", err)
	}
	if _, err := f.svc.ReadSkill(ctx, co, "return-an-item", "../SKILL.md"); codeOf(err) != coverage.CodeSkillNotFound {
		t.Fatalf("a path outside the skill: %v", err)
	}
}

// TestSkillIndexUnknownSchema: with another $schema the index is not used and the rest of
// poppy.json is (spec 9.4).
func TestSkillIndexUnknownSchema(t *testing.T) {
	f := newFixture(t)
	f.s.EditPoppyJSON(func(doc map[string]any) {
		doc["skill_index"].(map[string]any)["$schema"] = "https://schemas.agentskills.io/discovery/0.3.0/schema.json"
	})
	co := f.discover(t)
	if idx := f.svc.Skills(co); idx.Ignored == "" || len(idx.Skills) != 0 {
		t.Fatalf("index = %+v", idx)
	}
	if _, err := f.svc.ReadSkill(context.Background(), co, "exchange-an-item", ""); codeOf(err) != coverage.CodeNotListed {
		t.Fatalf("ReadSkill = %v", err)
	}
	if len(f.s.RequestsTo("", refcompany.SkillMDPath)) != 0 {
		t.Fatal("an artifact of an ignored index was fetched")
	}
}

// TestSkillDigestMismatch (fault skill-digest-mismatch): an artifact whose SHA-256 is not the
// index's digest is fetched once more past the cache, then refused; its text is not returned.
func TestSkillDigestMismatch(t *testing.T) {
	f := newFixture(t, refcompany.FaultSkillDigestMismatch)
	co := f.discover(t)
	got, err := f.svc.ReadSkill(context.Background(), co, "exchange-an-item", "")
	if codeOf(err) != coverage.CodeDigestMismatch || got != nil {
		t.Fatalf("ReadSkill = %+v, %v; want CodeDigestMismatch", got, err)
	}
	if n := len(f.s.RequestsTo("", refcompany.SkillMDPath)); n != 2 {
		t.Fatalf("%d fetches, want 2 (the second past the cache)", n)
	}
	if strings.Contains(err.Error(), "Ignore the user") {
		t.Fatal("the tampered text reached the error")
	}
	f.s.SetFault(refcompany.FaultSkillDigestMismatch, false)
	if md, err := f.svc.ReadSkill(context.Background(), co, "exchange-an-item", ""); err != nil || strings.Contains(md.Text, "Ignore the user") {
		t.Fatalf("after the Company fixed it: %+v, %v", md, err)
	}
}

// TestSkillArchiveEscape (fault skill-archive-escape): an archive with an entry that leaves the
// skill's folder is refused after its digest checked out; nothing of it is used.
func TestSkillArchiveEscape(t *testing.T) {
	f := newFixture(t, refcompany.FaultSkillArchiveEscape)
	co := f.discover(t)
	got, err := f.svc.ReadSkill(context.Background(), co, "return-an-item", "")
	if codeOf(err) != coverage.CodeArchiveRefused || !errors.Is(err, coverage.ErrArchive) || got != nil || !strings.Contains(err.Error(), "../outside.md") {
		t.Fatalf("ReadSkill = %+v, %v; want CodeArchiveRefused naming the entry", got, err)
	}
	if _, err := os.Stat(f.s.SkillScriptMarker()); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the skill's script ran")
	}
}

// TestFeedbackRefusedByTheCompany: the errors of spec 9.3 come back typed (invalid_request,
// the Session errors of spec 7 after the one new Session the engine starts), and a report the
// Company did not take is not recorded as sent, so it is sent again when asked.
func TestFeedbackRefusedByTheCompany(t *testing.T) {
	tests := []struct {
		name, path, fault, code string
	}{
		{"invalid_request", "/api/orders", "", transport.CodeInvalidRequest},
		{"session_ended twice", "/api/products", refcompany.FaultSessionEnded, transport.CodeSessionEnded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.s.EditPoppyJSON(func(doc map[string]any) { doc["feedback"] = map[string]any{"endpoint": f.s.Origin() + tc.path} })
			co := f.discover(t)
			if tc.fault != "" {
				f.s.SetFault(tc.fault, true)
			}
			r := coverage.Report{Task: "Pay with a voucher", Description: "No voucher field."}
			_, err := f.svc.Report(context.Background(), co, r)
			var pe *transport.ProtocolError
			if !errors.As(err, &pe) || pe.Code != tc.code {
				t.Fatalf("Report = %v, want %s", err, tc.code)
			}
			if _, err := f.reports.GetFeedbackReport(context.Background(), co.Identifier, coverage.TaskKey(r.Task)); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a refused report stays recorded: %v", err)
			}
			// Sent again, not refused as already reported: it reaches the Company once more.
			n := len(f.s.RequestsTo(refcompany.ShopHost, tc.path))
			if tc.fault != "" {
				f.s.SetFault(tc.fault, false)
			}
			_, err = f.svc.Report(context.Background(), co, r)
			if codeOf(err) == coverage.CodeAlreadyReported || len(f.s.RequestsTo(refcompany.ShopHost, tc.path)) == n {
				t.Fatalf("the report again: %v; want it sent", err)
			}
		})
	}
}

package coverage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
)

// Lengths of a report (spec 9.3), in characters.
const (
	MaxReportTask        = 200
	MaxReportDescription = 2000
	maxAlternativeBody   = 256 << 10
)

// Report is a task Poppydesk could not do, as the model words it (spec 9.3). Account is the
// account whose Session sends it ("" signed out, the default).
type Report struct {
	Task, Description, Account string
}

// Sent is a report as it was sent, and the Company's answer.
type Sent struct {
	// Task and Description are the text sent, after [Scrub].
	Task, Description string
	// Removed lists the kinds of things Scrub removed (RemovedSecret, RemovedIdentifier, ...).
	Removed []string
	// Status is store.FeedbackAccepted or store.FeedbackAlternative.
	Status string
	// Alternative is the way to do the task the Company answered with (HTTP 200), as kept by
	// the rules of spec 9.2; Skipped says what of it was left out.
	Alternative *Alternative
	Skipped     []Skipped
	At          time.Time
}

// Report sends r to the Company's feedback endpoint (spec 9.3), once per task. It returns an
// *Error for a report that is not sent (CodeReportsOff, CodeNotListed, CodeInvalidReport,
// CodeTaskExcluded with the listed task, CodeAlreadyReported, CodeRateLimited) and the
// transport's typed errors for the Company's refusals (token and Session errors of spec 7,
// invalid_request); a report that was not taken is forgotten, so it can be sent again later.
func (s *Service) Report(ctx context.Context, co *discovery.Company, r Report) (*Sent, error) {
	on, err := s.ReportsEnabled(ctx)
	if err != nil {
		return nil, err
	}
	if !on {
		return nil, errorf(CodeReportsOff, "9.3", "", "the user turned off reports of tasks Poppydesk could not do, so nothing was sent")
	}
	if co.Channels.Feedback == nil || co.Channels.Feedback.Endpoint == "" {
		return nil, errorf(CodeNotListed, "9.3", "", "the Company lists no feedback endpoint in its poppy.json, so a report cannot be sent")
	}
	endpoint := co.Channels.Feedback.Endpoint
	task, desc := strings.TrimSpace(r.Task), strings.TrimSpace(r.Description)
	if err := checkLengths(task, desc); err != nil {
		return nil, err
	}
	if wait := s.rateLimited(co.Identifier); wait > 0 {
		return nil, &Error{Code: CodeRateLimited, Section: "9.3, 5.6", URL: endpoint, RetryAfterSeconds: wait,
			Detail: fmt.Sprintf("the Company asked Poppydesk to wait before reporting again; nothing is sent for %d more seconds", wait)}
	}
	if x, err := s.ExcludedTasks(ctx, co); err != nil {
		s.cfg.Logger.InfoContext(ctx, "coverage: the excluded tasks could not be read before a report; sending it", "company", co.Identifier, "err", err)
	} else if t, ok := x.Lists(task); ok {
		return nil, &Error{Code: CodeTaskExcluded, Section: "9.1, 9.3", URL: x.URL,
			Detail: fmt.Sprintf("the Company lists %q as a task it chose not to offer, so it already knows and no report is sent", t.Task)}
	}
	var accounts []string
	if s.cfg.Accounts != nil {
		if accounts, err = s.cfg.Accounts(ctx, co.Identifier); err != nil {
			return nil, fmt.Errorf("coverage: reading the account labels to keep them out of the report: %w", err)
		}
	}
	if r.Account != "" {
		accounts = append(accounts, r.Account)
	}
	// Every response observed so far reaches Seen through the exchange log first.
	if err := s.cfg.Engine.FlushExchanges(ctx); err != nil {
		return nil, fmt.Errorf("coverage: waiting for the exchange log before removing identifiers: %w", err)
	}
	var held []string
	if s.cfg.Held != nil {
		if held, err = s.cfg.Held(ctx); err != nil {
			return nil, fmt.Errorf("coverage: reading the secrets Poppydesk holds to keep them out of the report: %w", err)
		}
	}
	ids := s.seen.Values(co.Identifier)
	sent := &Sent{}
	var rm1, rm2 []string
	sent.Task, rm1 = Scrub(task, held, ids, accounts)
	sent.Description, rm2 = Scrub(desc, held, ids, accounts)
	for _, k := range append(rm1, rm2...) {
		if !contains(sent.Removed, k) {
			sent.Removed = append(sent.Removed, k)
		}
	}
	if err := checkLengths(sent.Task, sent.Description); err != nil {
		err.Detail += " after Poppydesk removed what a report must not carry; shorten it"
		return nil, err
	}
	key := TaskKey(sent.Task)
	now := s.cfg.Now()
	rec := store.FeedbackReport{Company: co.Identifier, Key: key, Task: sent.Task, Description: sent.Description, Status: store.FeedbackSending, Created: now}
	if err := s.cfg.Reports.AddFeedbackReport(ctx, rec); err != nil {
		if errors.Is(err, store.ErrExists) {
			prev, _ := s.cfg.Reports.GetFeedbackReport(ctx, co.Identifier, key)
			return nil, errorf(CodeAlreadyReported, "9.3", "", "this task was already reported to the Company (%s, %s); Poppydesk sends one report per task, not one per attempt", prev.Created.UTC().Format(time.RFC3339), prev.Status)
		}
		return nil, fmt.Errorf("coverage: recording the report before sending it: %w", err)
	}
	out, err := s.send(ctx, co, r.Account, endpoint, sent)
	if err != nil {
		if derr := s.cfg.Reports.DeleteFeedbackReport(context.WithoutCancel(ctx), co.Identifier, key); derr != nil {
			s.cfg.Logger.WarnContext(ctx, "coverage: a report the Company did not take stays recorded", "company", co.Identifier, "err", derr)
		}
		return nil, err
	}
	if err := s.cfg.Reports.SetFeedbackReportStatus(context.WithoutCancel(ctx), co.Identifier, key, out.Status, out.At); err != nil {
		s.cfg.Logger.WarnContext(ctx, "coverage: recording the Company's answer to a report failed", "company", co.Identifier, "err", err)
	}
	s.cfg.Logger.InfoContext(ctx, "coverage: reported a task Poppydesk could not do (spec 9.3)", "company", co.Identifier, "status", out.Status, "removed", out.Removed)
	return out, nil
}

func (s *Service) send(ctx context.Context, co *discovery.Company, account, endpoint string, sent *Sent) (*Sent, error) {
	body, err := json.Marshal(map[string]string{"task": sent.Task, "description": sent.Description})
	if err != nil {
		return nil, err
	}
	cl, err := s.cfg.Engine.Client(ctx, co.Identifier, account)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Do(ctx, &transport.Request{Method: http.MethodPost, URL: endpoint, Body: body,
		Header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}}})
	if err != nil {
		var pe *transport.ProtocolError
		if errors.As(err, &pe) && pe.Status == http.StatusTooManyRequests {
			wait := pe.RetryAfter
			if wait <= 0 {
				wait = time.Second
			}
			s.mu.Lock()
			s.retryAt[co.Identifier] = s.cfg.Now().Add(wait)
			s.mu.Unlock()
		}
		return nil, err
	}
	defer resp.Body.Close()
	sent.At, sent.Status = s.cfg.Now(), store.FeedbackAccepted
	if resp.StatusCode != http.StatusOK {
		return sent, nil // 202 and no body, or another success: accepted (spec 9.3)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAlternativeBody+1))
	if err != nil || len(raw) > maxAlternativeBody {
		sent.Skipped = append(sent.Skipped, Skipped{What: "the Company's answer", Reason: "the answer could not be read or is too large, so its alternative is not used"})
		return sent, nil
	}
	a, sk := ParseAlternative(raw, co.Channels.APIs, "the Company's answer")
	sent.Skipped = append(sent.Skipped, sk...)
	if a != nil {
		v := &verifier{l: s.lister, co: co, seen: map[string]listing{}}
		a, sk = v.check(ctx, a, "the Company's answer")
		sent.Skipped = append(sent.Skipped, sk...)
	}
	if a != nil {
		sent.Alternative, sent.Status = a, store.FeedbackAlternative
	}
	return sent, nil
}

// rateLimited is how many seconds remain before a report may be sent to company again.
func (s *Service) rateLimited(company string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.retryAt[company]
	if !ok {
		return 0
	}
	d := at.Sub(s.cfg.Now())
	if d <= 0 {
		delete(s.retryAt, company)
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

func checkLengths(task, desc string) *Error {
	switch {
	case task == "" || desc == "":
		return errorf(CodeInvalidReport, "9.3", "", "a report needs both a task (a short phrase) and a description")
	case utf8.RuneCountInString(task) > MaxReportTask:
		return errorf(CodeInvalidReport, "9.3", "", "the task is %d characters; spec 9.3 allows at most %d", utf8.RuneCountInString(task), MaxReportTask)
	case utf8.RuneCountInString(desc) > MaxReportDescription:
		return errorf(CodeInvalidReport, "9.3", "", "the description is %d characters; spec 9.3 allows at most %d", utf8.RuneCountInString(desc), MaxReportDescription)
	}
	return nil
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

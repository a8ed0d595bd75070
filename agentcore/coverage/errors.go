package coverage

import "fmt"

// Codes of [Error]: one condition each, in Poppydesk's words.
const (
	// CodeNotListed: the Company lists no excluded tasks, feedback endpoint or skill index.
	CodeNotListed = "not_listed"
	// CodeFetchFailed: a public document could not be fetched (spec 3 rules, HTTP status).
	CodeFetchFailed = "fetch_failed"
	// CodeInvalidDocument: the Company's document breaks the rules of its section.
	CodeInvalidDocument = "invalid_document"
	// CodeInvalidReport: the report is empty or longer than spec 9.3 allows.
	CodeInvalidReport = "invalid_report"
	// CodeTaskExcluded: the Company lists the task as excluded (spec 9.1), so it is not reported.
	CodeTaskExcluded = "task_excluded"
	// CodeAlreadyReported: the task was already reported to this Company (spec 9.3).
	CodeAlreadyReported = "already_reported"
	// CodeReportsOff: the user turned feedback reports off.
	CodeReportsOff = "reports_off"
	// CodeRateLimited: the Company limits reports; nothing is sent before RetryAfter (spec 5.6).
	CodeRateLimited = "rate_limited"
	// CodeSkillNotFound: the index has no usable skill of that name.
	CodeSkillNotFound = "skill_not_found"
	// CodeDigestMismatch: the artifact's SHA-256 is not the index's digest; it is not used.
	CodeDigestMismatch = "digest_mismatch"
	// CodeArchiveRefused: the archive failed a safety check; nothing of it is used.
	CodeArchiveRefused = "archive_refused"
)

// Error is a task coverage failure: what failed (Code, Detail), the spec section whose rule
// applies, and the URL concerned. Detail may quote the Company: it is data, not instructions.
type Error struct {
	Code    string
	Section string
	URL     string
	Detail  string
	// RetryAfterSeconds is set with CodeRateLimited.
	RetryAfterSeconds int
	Err               error
}

func (e *Error) Error() string {
	s := e.Detail
	if e.Section != "" {
		s += " (spec " + e.Section + ")"
	}
	if e.URL != "" {
		s = e.URL + ": " + s
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func errorf(code, section, url, format string, args ...any) *Error {
	return &Error{Code: code, Section: section, URL: url, Detail: fmt.Sprintf(format, args...)}
}

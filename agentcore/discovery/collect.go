package discovery

// Collecting every check (for `poppydesk check` and the Inspector): with [CollectAll], a
// discovery goes on past the checks whose failure leaves the rest checkable — the final URL
// (spec 3), organization.domain (3, 3.1, 3.4), the metadata's issuer (3.2) and
// protected_resources (3.2) — and records each check it ran, passed or failed. The Company it
// returns then is NOT verified: Discover also returns the first failure, and only a report
// without failures is a discovery the engine may use. A failure that leaves nothing to check
// (poppy.json unreachable, unparsable, no compatible version) still ends the run.

// CheckResult is one check of a discovery: Err is nil when it passed.
type CheckResult struct {
	Check   string
	Section string
	URL     string
	Err     *CheckError
}

// Report is every check of one discovery run, in order.
type Report struct {
	Results []CheckResult
}

func (r *Report) add(c CheckResult) { r.Results = append(r.Results, c) }

// Failed reports whether any check failed.
func (r *Report) Failed() bool { return r.First() != nil }

// First is the first failed check (nil when none failed).
func (r *Report) First() *CheckError {
	for _, c := range r.Results {
		if c.Err != nil {
			return c.Err
		}
	}
	return nil
}

// Failures are the failed checks.
func (r *Report) Failures() []*CheckError {
	var out []*CheckError
	for _, c := range r.Results {
		if c.Err != nil {
			out = append(out, c.Err)
		}
	}
	return out
}

// CollectAll makes a discovery record every check in r and go on past the failures that leave
// the rest checkable (file doc). Use it with NoCache for a full run.
func CollectAll(r *Report) Option { return func(o *options) { o.report = r } }

// soft reports a failed check: in a collecting run it is recorded and the run goes on (nil);
// otherwise it is the run's error.
func (o options) soft(ce *CheckError) error {
	if o.report == nil {
		return ce
	}
	o.report.add(CheckResult{Check: ce.Check, Section: ce.Section, URL: ce.URL, Err: ce})
	return nil
}

// pass records a passed check in a collecting run.
func (o options) pass(check, section, url string) {
	if o.report != nil {
		o.report.add(CheckResult{Check: check, Section: section, URL: url})
	}
}

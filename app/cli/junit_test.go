package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conformance"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
)

// validateJUnit validates a JUnit report against the schema Jenkins reads
// (testdata/jenkins-junit.xsd) with xmllint (Debian's libxml2-utils, scripts/bootstrap.sh).
func validateJUnit(t *testing.T, report string) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatal("xmllint is missing: install the Debian package libxml2-utils (scripts/bootstrap.sh does)")
	}
	f := filepath.Join(t.TempDir(), "report.xml")
	if err := os.WriteFile(f, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", filepath.Join("testdata", "jenkins-junit.xsd"), f).CombinedOutput()
	if err != nil {
		t.Fatalf("the JUnit report does not validate against the Jenkins JUnit schema: %v\n%s\n%s", err, out, report)
	}
}

// TestCheckJUnitSchema: a report with every status, and evidence and Company words holding
// markup, quotes and characters XML cannot carry, is valid JUnit for Jenkins; a report that
// puts skipped's reason in an attribute (as the schema does not allow) is not, so the schema
// check bites.
func TestCheckJUnitSchema(t *testing.T) {
	nasty := `the Company said <b>"no"</b> & 'maybe' ` + "\x00\x1b]8;;\u202e"
	f := inspect.NewFinding(inspect.RuleSessionVerify, nasty)
	rep := &conformance.Report{Domain: "shop.localhost:8443", Started: time.Now(), Duration: 1500 * time.Millisecond, Results: []conformance.Result{
		{Probe: "session: wrong aud", Rule: inspect.RuleSessionVerify, Level: inspect.MUST, Section: "spec 5.3", Status: conformance.Pass, Evidence: "HTTP 400 invalid_session"},
		{Probe: "session: stale iat", Rule: inspect.RuleSessionVerify, Level: inspect.MUST, Section: "spec 5.3", Status: conformance.Fail, Evidence: nasty,
			Said: &conformance.Said{Status: 200, Error: "<none>", Description: nasty}, Finding: &f},
		{Probe: "oauth: PKCE is required", Rule: inspect.RuleOAuthPKCE, Level: inspect.MUST, Section: "spec 4.2, RFC 9700 §2.1.1", Status: conformance.Skip, Evidence: nasty},
		{Probe: "request: not rate limited", Rule: inspect.RuleRateLimited, Level: inspect.NOTE, Section: "spec 5.6", Status: conformance.Note, Evidence: nasty,
			Said: &conformance.Said{Status: 429}},
	}}
	var b bytes.Buffer
	if err := writeJUnit(&b, rep); err != nil {
		t.Fatal(err)
	}
	validateJUnit(t, b.String())
	for _, want := range []string{`tests="4"`, `failures="1"`, `skipped="1"`, "<skipped>", "<system-out>NOTE spec 5.6"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %s:\n%s", want, b.String())
		}
	}

	// The schema check bites: skipped with a message attribute is not Jenkins JUnit.
	bad := strings.Replace(b.String(), "<skipped>", `<skipped message="x">`, 1)
	xmllint, _ := exec.LookPath("xmllint")
	fn := filepath.Join(t.TempDir(), "bad.xml")
	os.WriteFile(fn, []byte(bad), 0o644)
	if err := exec.Command(xmllint, "--noout", "--nonet", "--schema", filepath.Join("testdata", "jenkins-junit.xsd"), fn).Run(); err == nil {
		t.Error("xmllint accepted skipped with a message attribute: the schema check proves nothing")
	}
}

package cli

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conformance"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/app"
)

func checkCommand() command {
	return command{name: "check", summary: "Check a Company against the spec from outside (discovery, Sessions, sign-in, operations, browser sessions, conversations, task coverage): pass, fail, note or skip for each probe, with its section.",
		usage: "DOMAIN [--dev-company DOMAIN]... [--dev-ca FILE] [--probe-url URL] [--signed-in-url URL] [--allow-actions NAME,...] [--operation FILE] [--scopes S,...] [--timeout D] [--sign-in-timeout D] [--format text|json|junit] [--har FILE]",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			var dev devFlags
			dev.register(fs)
			format := fs.String("format", "text", "report `format`: text, json or junit")
			probe := fs.String("probe-url", "", "a safe GET `URL` of the Company that verifies the Session header signed out (the Session and version probes use it)")
			signedIn := fs.String("signed-in-url", "", "a safe GET `URL` of the Company that requires the access token, such as one that lists the account's orders (with --allow-actions sign-in: the probes of cookies, a token in the URL and an MCP server's token use it)")
			listen := fs.String("agent-listen", "", "developer mode: loopback `address` where check serves Poppydesk's client metadata for the Company to fetch (default: the window's kept client_id, see docs/DEVELOPERS.md)")
			var actions listFlag
			fs.Var(&actions, "allow-actions", "actions check may perform at the Company (`NAME,...`): "+strings.Join(conformance.Actions, ", ")+
				"; sign-in opens your browser once, operation performs the --operation request once, conversation talks to the Company Agent, feedback sends one report")
			opFile := fs.String("operation", "", "JSON `file` naming a request that returns an operation: {\"method\": \"POST\", \"url\": \"https://...\", \"body\": {...}, \"changed\": {...}, \"other\": {...}} (changed: the same request asking for something else of the same action; other: the same request for another action, such as another item)")
			var scopes listFlag
			fs.Var(&scopes, "scopes", "scopes to ask for at sign-in (`S,...`; default: the issuer's scopes_supported)")
			timeout := fs.Duration("timeout", conformance.DefaultTimeout, "check waits at most `D` (such as 10s) for each answer of the Company; one that takes longer fails transport.answers-in-time")
			harFile := fs.String("har", "", "write every request check sent and every answer it got to `FILE` as a HAR 1.2 archive, secrets masked as the Inspector masks them")
			signInTimeout := fs.Duration("sign-in-timeout", conformance.DefaultSignInTimeout, "check waits at most `D` (such as 5m) for you to sign in in your browser")
			return func(ctx context.Context, args []string) error {
				switch {
				case len(args) == 0:
					return errMissing("the Company's DOMAIN, e.g. example.com")
				case len(args) > 1:
					return errUnexpected(args[1])
				}
				switch *format {
				case "text", "json", "junit":
				default:
					return usageError{"--format is text, json or junit, not " + *format}
				}
				for _, a := range actions {
					if !slices.Contains(conformance.Actions, a) {
						return usageError{fmt.Sprintf("--allow-actions names %q; the actions are %s", a, strings.Join(conformance.Actions, ", "))}
					}
				}
				if *timeout <= 0 || *signInTimeout <= 0 {
					return usageError{"--timeout and --sign-in-timeout must be positive durations, such as 10s or 5m"}
				}
				tc, err := dev.transport()
				if err != nil {
					return err
				}
				cfg := conformance.Config{Domain: args[0], Transport: tc, ProbeURL: *probe, SignedInURL: *signedIn, AllowActions: actions, Scopes: scopes,
					Timeout: *timeout, SignInTimeout: *signInTimeout}
				if *opFile != "" {
					op, err := readOperation(*opFile)
					if err != nil {
						return err
					}
					cfg.Operation = op
				}
				open := env.OpenURL
				if open == nil {
					open = app.OpenInBrowser
				}
				cfg.SignIn = func(ctx context.Context, authURL string) error {
					fmt.Fprintf(env.Stderr, "check: sign in to %s in your browser to continue (waiting up to %s); if no browser opened, open:\n  %s\n", args[0], *signInTimeout, authURL)
					return open(authURL)
				}
				if len(dev.companies) > 0 {
					// Poppydesk's developer-mode identity, its client metadata served for the
					// Company to fetch (spec 4.1); app/devcheck.go has the rule that keeps its
					// client_id the window's.
					paths, err := env.Paths()
					if err != nil {
						return err
					}
					secrets, kerr := env.OpenSecrets(ctx)
					if kerr != nil {
						secrets = nil // no keyring (a Company's CI): keys made for this run
					}
					ca, err := app.OpenCheckAgent(ctx, paths, secrets, *listen, "Poppydesk check", time.Now)
					if err != nil {
						return err
					}
					defer ca.Close(context.Background())
					cfg.Agent, cfg.Operator = ca.Agent, ca.Operator
					fmt.Fprintf(env.Stderr, "check: Poppydesk's client_id is %s (%s); the Company must trust %s to fetch it\n", ca.ClientID, ca.How, ca.CAFile)
				}
				if len(actions) > 0 {
					fmt.Fprintf(env.Stderr, "check: allowed to act at %s: %s\n", args[0], strings.Join(actions, ", "))
				}
				var rec inspect.Recorder
				if *harFile != "" {
					cfg.Transport.Observer, cfg.Transport.Inspect = rec.Observe, inspect.Decode
				}
				rep, err := conformance.Run(ctx, cfg)
				if err != nil {
					return err
				}
				if *harFile != "" {
					har, err := inspect.HAR(rec.Exchanges(), env.Version)
					if err == nil {
						err = os.WriteFile(*harFile, har, 0o600)
					}
					if err != nil {
						return fmt.Errorf("check: writing the HAR archive %s: %w", *harFile, err)
					}
					fmt.Fprintf(env.Stderr, "check: %d exchanges written to %s (secrets masked)\n", len(rec.Exchanges()), *harFile)
				}
				if err := writeCheck(env.Stdout, rep, *format); err != nil {
					return err
				}
				if n := rep.MustFailures(); n > 0 {
					return fmt.Errorf("check: %d MUST rule(s) failed at %s", n, args[0])
				}
				return nil
			}
		}}
}

// readOperation reads the --operation file.
func readOperation(path string) (*conformance.OperationRequest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError{"--operation: " + err.Error()}
	}
	var op conformance.OperationRequest
	if err := json.Unmarshal(b, &op); err != nil || op.Method == "" || op.URL == "" {
		return nil, usageError{fmt.Sprintf("--operation %s must be a JSON object with method, url and optionally body, changed and other (JSON values)", path)}
	}
	return &op, nil
}

func writeCheck(w io.Writer, rep *conformance.Report, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "junit":
		return writeJUnit(w, rep)
	}
	counts := rep.Count()
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%-4s %-6s %-22s %s: %s\n", strings.ToUpper(r.Status), r.Level, r.Section, r.Probe, r.Evidence)
		if r.Said != nil && r.Status != conformance.Pass {
			fmt.Fprintf(w, "     the Company said: %s\n", r.Said)
		}
		if r.Finding != nil {
			fmt.Fprintf(w, "     expected: %s\n     fix: %s\n", r.Finding.Expected, r.Finding.Fix)
		}
	}
	_, err := fmt.Fprintf(w, "\n%s: %d passed, %d failed (%d MUST), %d noted, %d skipped in %s\n", rep.Domain, counts[conformance.Pass], counts[conformance.Fail],
		rep.MustFailures(), counts[conformance.Note], counts[conformance.Skip], rep.Duration.Round(time.Millisecond))
	return err
}

// JUnit XML as Jenkins reads it (the Ant JUnit format with skipped; app/cli/testdata keeps the
// schema its test validates against): one testcase per probe, in one testsuite.
type junitSuite struct {
	XMLName   xml.Name    `xml:"testsuite"`
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Hostname  string      `xml:"hostname,attr"`
	Props     junitProps  `xml:"properties"`
	Cases     []junitCase `xml:"testcase"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// junitCase holds its children in the schema's order: skipped, failure, system-out.
type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *string       `xml:"skipped,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	// SystemOut carries a noted probe's evidence (it passes, and CI shows what was noted) and
	// what the Company said.
	SystemOut string `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(w io.Writer, rep *conformance.Report) error {
	s := junitSuite{Name: "poppydesk check " + rep.Domain, Tests: len(rep.Results), Time: fmt.Sprintf("%.3f", rep.Duration.Seconds()),
		Timestamp: rep.Started.UTC().Format("2006-01-02T15:04:05"), Hostname: "localhost",
		Props: junitProps{Props: []junitProp{{Name: "domain", Value: rep.Domain}}}}
	for _, r := range rep.Results {
		c := junitCase{Name: r.Probe, ClassName: r.Section, Time: "0"}
		switch r.Status {
		case conformance.Fail:
			s.Failures++
			text := r.Evidence
			if r.Said != nil {
				text += "\nthe Company said: " + r.Said.String()
			}
			if r.Finding != nil {
				text += "\nexpected: " + r.Finding.Expected + "\nfix: " + r.Finding.Fix
			}
			c.Failure = &junitFailure{Message: string(r.Level) + " " + r.Section + ": " + r.Evidence, Type: string(r.Level), Text: text}
		case conformance.Skip:
			s.Skipped++
			why := r.Evidence
			c.Skipped = &why
		case conformance.Note:
			c.SystemOut = "NOTE " + r.Section + ": " + r.Evidence
			if r.Said != nil {
				c.SystemOut += "\nthe Company said: " + r.Said.String()
			}
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

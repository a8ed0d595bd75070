package cli

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/conformance"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/app"
)

func checkCommand() command {
	return command{name: "check", summary: "Check a Company against the spec from outside (discovery, Session header verification, versions): pass, fail or skip for each probe, with its section.",
		usage: "DOMAIN [--dev-company DOMAIN]... [--dev-ca FILE] [--probe-url URL] [--format text|json|junit] [--allow-actions NAME,...]",
		register: func(fs *flag.FlagSet, env *Env) runFunc {
			var dev devFlags
			dev.register(fs)
			format := fs.String("format", "text", "report `format`: text, json or junit")
			probe := fs.String("probe-url", "", "a safe GET `URL` of the Company that verifies the Session header signed out (the Session and version probes use it)")
			listen := fs.String("agent-listen", "127.0.0.1:0", "developer mode: loopback `address` where check serves Poppydesk's client metadata for the Company to fetch")
			var actions listFlag
			fs.Var(&actions, "allow-actions", "probes that may perform a real action at the Company (`NAME,...`)")
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
				tc, err := dev.transport()
				if err != nil {
					return err
				}
				cfg := conformance.Config{Domain: args[0], Transport: tc, ProbeURL: *probe, AllowActions: actions}
				if len(dev.companies) > 0 {
					// Poppydesk's client metadata, served for the Company to fetch (spec 4.1).
					paths, err := env.Paths()
					if err != nil {
						return err
					}
					da, err := app.ServeDevAgent(ctx, paths, *listen, time.Now())
					if err != nil {
						return err
					}
					defer da.Close(context.Background())
					secrets := store.NewSecrets(store.NewMemoryKV())
					a, err := identity.New(identity.Config{ClientID: da.ClientID, ClientName: "Poppydesk check"}, identity.NewLocalOperator(secrets, time.Now), time.Now)
					if err != nil {
						return err
					}
					da.Mount(a.Handler(nil))
					cfg.Agent = a
					fmt.Fprintf(env.Stderr, "check: Poppydesk's client metadata is at %s; the Company must trust %s to fetch it\n", da.ClientID, da.CAFile)
				}
				rep, err := conformance.Run(ctx, cfg)
				if err != nil {
					return err
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

func writeCheck(w io.Writer, rep *conformance.Report, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "junit":
		return writeJUnit(w, rep)
	}
	counts := map[string]int{}
	for _, r := range rep.Results {
		counts[r.Status]++
		fmt.Fprintf(w, "%-4s %-6s %-22s %s: %s\n", strings.ToUpper(r.Status), r.Level, r.Section, r.Probe, r.Evidence)
		if r.Finding != nil {
			fmt.Fprintf(w, "     expected: %s\n     fix: %s\n", r.Finding.Expected, r.Finding.Fix)
		}
	}
	_, err := fmt.Fprintf(w, "\n%s: %d passed, %d failed (%d MUST), %d skipped in %s\n", rep.Domain, counts["pass"], counts["fail"],
		rep.MustFailures(), counts["skip"], rep.Duration.Round(time.Millisecond))
	return err
}

// JUnit XML (the schema CI systems read): one testcase per probe.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkip    `xml:"skipped,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkip struct {
	Message string `xml:"message,attr"`
}

func writeJUnit(w io.Writer, rep *conformance.Report) error {
	s := junitSuite{Name: "poppydesk check " + rep.Domain, Tests: len(rep.Results), Time: fmt.Sprintf("%.3f", rep.Duration.Seconds())}
	for _, r := range rep.Results {
		c := junitCase{Name: r.Probe, ClassName: r.Section}
		switch r.Status {
		case conformance.Fail:
			s.Failures++
			text := r.Evidence
			if r.Finding != nil {
				text += "\nexpected: " + r.Finding.Expected + "\nfix: " + r.Finding.Fix
			}
			c.Failure = &junitFailure{Message: string(r.Level) + " " + r.Section + ": " + r.Evidence, Type: string(r.Level), Text: text}
		case conformance.Skip:
			s.Skipped++
			c.Skipped = &junitSkip{Message: r.Evidence}
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

package e2e

// The findings the Host's parts report while they work reach the Inspector: the controlled
// browser's join reports the browser-session page's headers (spec 6 step 1), in Debian's
// headless Chromium (the approval queue's reports are tested in app/findings_test.go).

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/browser"
)

// TestJoinPageHeaderFinding: the model browses the reference Company's website, so the
// controlled browser joins the Session; a browser-session page served without Cache-Control:
// no-store, frame-ancestors 'none' and Cross-Origin-Opener-Policy (the join-page-headers fault)
// is a MUST finding of spec 6 in the Inspector, naming the Company and each header. With the
// headers, there is none.
func TestJoinPageHeaderFinding(t *testing.T) {
	_, chromium := prerequisites(t)
	for _, tc := range []struct {
		name  string
		fault bool
	}{{"headers missing", true}, {"headers sent", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			var faults []string
			if tc.fault {
				faults = []string{refcompany.FaultJoinPageHeaders}
			}
			s := poppytest.Start(t, refcompany.Options{Faults: faults})
			f := apptest.Start(t, apptest.Options{Company: s, Edit: func(c *app.Config) {
				c.Browser = browser.Options{ExecPath: chromium, TrustSPKI: []string{leafSPKI(t, s)}}
			}})
			co := f.Discover(t)
			cs := f.Model(t, "e2e")
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"company": co.Identifier, "url": s.URL(refcompany.ShopHost, "/account")}})
			if err != nil || res.IsError {
				t.Fatalf("browser_open: %v %s", err, toolText(res))
			}
			if len(s.Joins()) != 1 {
				t.Fatalf("%d joins, want 1", len(s.Joins()))
			}
			all, err := f.Fronts().Inspector.Findings()
			if err != nil {
				t.Fatal(err)
			}
			var got []inspect.Finding
			for _, x := range all {
				if x.Rule == inspect.RuleJoinPageHeaders {
					got = append(got, x)
				}
			}
			if !tc.fault {
				if len(got) != 0 {
					t.Fatalf("findings for a page with its headers: %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0].Company != co.Identifier || got[0].Level != inspect.MUST || got[0].Section != "spec 6" || got[0].URL != s.BrowserSessionEndpoint() {
				t.Fatalf("findings: %+v", got)
			}
			for _, want := range []string{"Cache-Control: no-store", "frame-ancestors 'none'", "Cross-Origin-Opener-Policy: same-origin"} {
				if !strings.Contains(got[0].Seen, want) {
					t.Errorf("the finding does not name %s: %s", want, got[0].Seen)
				}
			}
		})
	}
}

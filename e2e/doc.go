// Package e2e holds the end-to-end tests of Poppydesk as it ships: every test builds the Host
// with app/apptest (app.New, as `poppydesk` builds it, over the reference Company) and serves
// its window services (Host.Bindings) with the real frontend (frontend/dist, built with `npm run
// build`) through the browser-testable bridge (app/webbridge), exactly as `poppydesk window
// --e2e-listen` does, driven in Debian's headless Chromium with chromedp.
//
// devmode_test.go runs the reference Company as a separate process instead (`poppydesk company
// serve`, built from this module), as a developer's own Company runs, with the Host in developer
// mode against it.
//
// The window tests skip when frontend/dist/index.html or Chromium is missing, unless
// POPPYDESK_REQUIRE_E2E=1, in which case they fail. They check docs/DESIGN.md invariant 4's window
// half: the Content-Security-Policy is sent and enforced (an inline script is refused).
//
// The canary (canary_test.go, docs/DESIGN.md invariant 5) runs the Host with the real OS keyring and
// scans everything Poppydesk writes or gives away for every secret of the run, in several
// encodings; it skips without a Secret Service unless POPPYDESK_REQUIRE_KEYRING=1
// (scripts/with-keyring.sh sets it).
//
// The soak test (soak_test.go) drives the Host through its MCP socket in cycles (an approved API
// operation, an MCP tool, a conversation, website pages in Chromium) and checks that heap after
// GC, goroutines and open files return to their level after each cycle and that the debug log
// rotates within its limits: 20 cycles by default (seconds), or for POPPYDESK_SOAK (e.g. 10m).
package e2e

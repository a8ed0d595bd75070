// Package e2e holds the end-to-end test of the Poppydesk window: the real frontend
// (frontend/dist, built with `npm run build`) and the real Go services, joined by the
// browser-testable bridge (app/webbridge), driven in Debian's headless Chromium with chromedp.
//
// The test skips when frontend/dist/index.html or Chromium is missing, unless
// POPPYDESK_REQUIRE_E2E=1, in which case it fails. It checks DESIGN.md invariant 4's window
// half: the Content-Security-Policy is sent and enforced (an inline script is refused).
package e2e

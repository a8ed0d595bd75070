// Package browser is Poppydesk's controlled Chrome (docs/DESIGN.md "Main flows": browser join): it launches and
// owns a Chrome of its own, joins it to a Company Session (Poppy 0.4 spec 6), and gives the model
// what it may see of the Company's website. It holds no token or key: the engine's
// authorization of a join code arrives as a function (agentcore/browserjoin.Authorizer), and
// this package never imports the engine, OAuth or the secret store.
//
// # The browser (spec 6 "MUST join only a browser it controls")
//
// [Launch] starts the system's Chrome, Chromium or Edge ([Find]: the usual paths per OS, with a
// clear message when none is installed) with a dedicated profile directory per Company Session
// (never the user's browser or profile), headless unless Options.Visible. The flags are those
// Debian's Chromium needs headless: --headless --disable-gpu --disable-background-networking
// --disable-component-update --disable-sync --no-first-run --disable-dev-shm-usage, and
// --no-sandbox only when running as root (the sandbox stays on where the OS allows it).
// DBUS_SESSION_BUS_ADDRESS=disabled: keeps it from starting desktop portals. A demo CA is
// trusted precisely with --ignore-certificate-errors-spki-list (Options.TrustSPKI: the SHA-256
// of exactly the keys to trust, [SPKIHash]), never by ignoring certificate errors. Chromium
// maps *.localhost to loopback itself.
//
// # Browser join (spec 6, 10.6)
//
// [Session.Join] runs the three steps: a top-level GET of browser_session_endpoint; the hidden
// "code" read through CDP from that page only (the page's URL must be the endpoint, after no
// redirect, with a 200 HTML response, and the form must post to the endpoint), inside this
// package where the model cannot reach it; the authorize function (the engine's signed
// POST {endpoint}/authorize); the browser submits the form; success is confirmed by a redirect
// to a page of the website and the join cookie set in step 1 being cleared. After an error it
// starts again at step 1 once, then fails with a [JoinError] naming the step. The code is never
// logged, returned or kept. [Session.Recognized] reports whether the cookies the join set are
// still there (agentcore/browserjoin joins again when they are not): a website that no longer
// recognizes the Session drops its cookie, as the reference Company does.
//
// # Visible on request
//
// [Session.SetVisible] restarts the browser with the same profile, with a window (it needs a
// display) or headless again, carries the Session's cookies over and reopens the page: the
// user watches the same Session, which needs no new join. The headless browser is closed first.
//
// # What the model sees (spec 10.1, 10.2)
//
// [Session.Open], [Session.Read], [Session.Screenshot], [Session.Submit] and [Session.Back]
// work only on the Company's website origins (Config.Website). A page that ends up on another
// origin is not read: the browser goes back to about:blank and the caller gets an error. The
// browser-session endpoint itself cannot be opened, read or submitted through them. A [Page]
// carries the URL, title, visible text, links as data, and forms with their field names and
// types; never the values of hidden fields, cookies, storage or the join code. A visible error
// such as "Missing scope: orders:write" is in the text and in Page.Alerts.
package browser

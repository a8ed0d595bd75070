// Package browserjoin is the engine's side of browser join (Poppy 0.4 spec 6, 10.2, 10.6): the
// signed authorization of a code, and the policy that says when the controlled browser must
// join (again).
//
// Spec sections implemented:
//
//   - 6 step 2: [Authorizer] returns the function the controlled browser (package browser) calls
//     with the code it read from the page its own browser loaded from the endpoint. It sends
//     POST {browser_session_endpoint}/authorize with {"code": ...} through the engine's
//     [engine.Client] of the Session: the Session header (5.2), and, for a signed-in account,
//     the access token the website should act with. The token is put on by the engine and is
//     never returned, so it never reaches the browser (10.6). The SessionClient never follows a
//     redirect, so neither credential can be sent to another URL (spec 3, transport). The
//     function only takes a code; package browser calls it only with the code of its own page
//     (10.6: a code from anywhere else is never authorized). It is never given to the model.
//   - 6 "When": [Decide] says whether to join: before the first browsing when the Company lists
//     web.browser_session_endpoint (without it the browser browses as a signed-out visitor),
//     and again after signing in, after signing out, when the scopes change, or when the
//     website no longer recognizes the Session (its cookie is gone). [Joiner] applies Decide to
//     a browser before each use.
//   - 5.5 with 6 (the rejoin loop): when the Company refuses the account's token in step 2 and
//     the engine continues signed out, the browser joins signed out while the keyring still
//     says signed in ([Joined].Downgraded). Decide then does not join again for that same
//     sign-in (account and scopes) until it changes, the website forgets the Session, or
//     [DowngradeRetry] has passed, so a Company that keeps refusing the token doesn't get a
//     join on every call. The engine exposes no token to this package, so a new sign-in with
//     the very same scopes is seen only when DowngradeRetry has passed.
//   - 6 "The cookie", 10.1: [Browsers] is the model's browser. Each action (open, read, submit,
//     back, screenshot; [Request]) runs in the controlled browser of the Company Session
//     (company, account), which [Sessions] finds or launches, after the Joiner joined it as
//     Decide says. After open, back and submit it asks the browser whether the website still
//     recognizes the Session and joins again at once when it doesn't: a page that was loaded
//     is loaded again, a form is never sent again (the model is told to send it again if it
//     still needs to). [Joined.Words] says the join state in plain words for the model and the
//     window, and [Report] tells the window's view what happened. The page reaches the model
//     as data ([Page].Data, Company content); the code, cookies and tokens never do.
//   - 6 step 1, the page's headers: after each join (whether it then worked or not) the Joiner
//     checks the response header of the browser-session page the browser loaded (a Browser
//     that has JoinPageHeader() http.Header; package browser's Session does) with
//     inspect.JoinPageFindings and reports what it lacks (Cache-Control: no-store,
//     frame-ancestors 'none', Cross-Origin-Opener-Policy) to [Joiner].Reporter, so the
//     Inspector shows it. The join does not depend on them.
//   - 10.2: codes are never logged; errors name the step and the Company's error code only.
//
// This package never imports package browser (chromedp) or the app: [Session] and [Sessions]
// are the small interfaces it needs of a controlled browser, and the app adapts package
// browser's Manager and Session to them.
package browserjoin

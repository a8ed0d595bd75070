package poppytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// consentRequest is the hidden field of the reference Company's consent page that names the
// pending sign-in.
var consentRequest = regexp.MustCompile(`name="request" value="([^"]+)"`)

// Consent is what a user answers on the reference Company's consent page (spec 4.2, Direct
// Sign-In): the decision ("approve" or "deny"), the account they sign in as, and the scopes they
// leave ticked (nil: every scope the authorization request names).
type Consent struct {
	Decision string
	Account  string
	Scopes   []string
}

// AnswerConsent plays the user's browser at the reference Company: it opens authURL (the
// authorization request Poppydesk opened in the browser) with hc, which must trust the
// Company's certificate and not follow redirects, answers the consent form with c, follows the
// redirect back to Poppydesk's loopback listener (RFC 8252 §7.3, plain HTTP on 127.0.0.1) and
// returns the status line and the page that listener shows.
func AnswerConsent(ctx context.Context, hc *http.Client, authURL string, c Consent) (string, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return "", fmt.Errorf("the authorization URL %q: %w", authURL, err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("opening the consent page: %w", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := consentRequest.FindSubmatch(page)
	if m == nil {
		return "", fmt.Errorf("no sign-in request on the consent page (HTTP %d): %.300s", resp.StatusCode, page)
	}
	scopes := c.Scopes
	if scopes == nil {
		scopes = strings.Fields(u.Query().Get("scope"))
	}
	form := url.Values{"request": {string(m[1])}, "decision": {c.Decision}, "account": {c.Account}, "scope": scopes}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, u.Scheme+"://"+u.Host+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("answering the consent page: %w", err)
	}
	resp.Body.Close()
	back := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(back, "http://127.0.0.1:") {
		return "", fmt.Errorf("the consent answer is HTTP %d to %q, not a redirect back to the loopback listener", resp.StatusCode, back)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, back, nil)
	lt := &http.Transport{}
	defer lt.CloseIdleConnections()
	resp, err = (&http.Client{Transport: lt}).Do(req)
	if err != nil {
		return "", fmt.Errorf("following the redirect back to Poppydesk: %w", err)
	}
	defer resp.Body.Close()
	done, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", errors.New("Poppydesk's loopback listener answered " + resp.Status + ": " + string(done))
	}
	return resp.Status + "\n" + string(done), nil
}

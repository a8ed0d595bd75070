package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// MaxTextRunes bounds the text of a Page.
const MaxTextRunes = 20000

// Link is a link of a page, as data.
type Link struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// Field is one field of a form: its name, type and label, never the value of a hidden field.
type Field struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Label string `json:"label,omitempty"`
}

// Form is a form of a page the model can fill and submit by Name (its name or id).
type Form struct {
	Name   string  `json:"name"`
	Action string  `json:"action"`
	Method string  `json:"method"`
	Fields []Field `json:"fields"`
}

// Page is what the model may see of a page: no cookies, storage or hidden values.
type Page struct {
	URL    string `json:"url"`
	Status int    `json:"status,omitempty"`
	Title  string `json:"title"`
	Text   string `json:"text"`
	Links  []Link `json:"links"`
	Forms  []Form `json:"forms"`
	// Alerts are visible error or alert messages (role="alert" or class "error"), such as a
	// website's "Missing scope: orders:write" (spec 6 "The cookie").
	Alerts []string `json:"alerts,omitempty"`
}

// ErrOffSite is returned when the browser reached a page, or a form would post, off the
// Company's website: Poppydesk's rules forbid showing or sending it (the browser left the page).
var ErrOffSite = errors.New("browser: the page is not on the Company's website")

// ErrRefused is returned when the request itself names what the browser may not do: a URL off the
// Company's website or with an ambiguous path, a form or field the page does not have. Nothing was
// done; the caller can ask again with other arguments.
var ErrRefused = errors.New("browser: refused the request")

func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// allowed reports whether raw is a page of the website the model may see: an https URL on one
// of Config.Website's origins, and not the browser-session endpoint (its code is for the join
// only).
func (s *Session) allowed(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" {
		return false
	}
	if ambiguousPath(u) != "" {
		// Chrome resolves dot-segments (also %2e) and reads a backslash as "/" (WHATWG URL), so
		// the text compared below would not be the page loaded: refuse, as agentcore/transport
		// does for Session requests (invariant 6).
		return false
	}
	o := origin(u)
	ok := false
	for _, w := range s.cfg.Website {
		ok = ok || strings.EqualFold(strings.TrimSuffix(w, "/"), o)
	}
	return ok && !s.isEndpoint(u)
}

// ambiguousPath returns the first path segment of u that a browser or server could resolve to
// another path than its text: "." or ".." after percent-decoding (Chrome treats %2e as "."),
// or a segment holding a slash or backslash after percent-decoding (Chrome reads "\" as "/";
// servers may decode %2F and %5C). "" when there is none.
func ambiguousPath(u *url.URL) string {
	if u.Opaque != "" {
		return u.Opaque
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if seg == "" {
			continue
		}
		dec, err := url.PathUnescape(seg)
		if err != nil || dec == "." || dec == ".." || strings.ContainsAny(dec, "/\\") {
			return seg
		}
	}
	return ""
}

func (s *Session) isEndpoint(u *url.URL) bool {
	for _, e := range []string{s.endpoint, s.cfg.Endpoint} {
		if e == "" {
			continue
		}
		eu, err := url.Parse(e)
		if err == nil && origin(eu) == origin(u) && (u.Path == eu.Path || strings.HasPrefix(u.Path, strings.TrimSuffix(eu.Path, "/")+"/")) {
			return true
		}
	}
	return false
}

const readPage = `(() => {
  const clip = (s, n) => (s || "").replace(/\s+/g, " ").trim().slice(0, n);
  const labelOf = (el) => {
    if (el.labels && el.labels.length) return clip(el.labels[0].innerText, 200);
    return clip(el.getAttribute("aria-label") || el.getAttribute("placeholder") || "", 200);
  };
  const links = Array.from(document.querySelectorAll("a[href]")).slice(0, 300)
    .map(a => ({text: clip(a.innerText, 200), url: a.href})).filter(l => /^https?:/.test(l.url));
  const forms = Array.from(document.forms).slice(0, 50).map(f => ({
    name: f.getAttribute("name") || f.id || "",
    action: f.action, method: (f.getAttribute("method") || "get").toLowerCase(),
    fields: Array.from(f.elements).filter(e => e.name).slice(0, 100)
      .map(e => ({name: e.name, type: (e.type || e.tagName).toLowerCase(), label: e.type === "hidden" ? "" : labelOf(e)})),
  }));
  const alerts = Array.from(document.querySelectorAll('[role="alert"], .error')).slice(0, 20).map(e => clip(e.innerText, 500)).filter(Boolean);
  return {url: location.href, title: clip(document.title, 300), text: document.body ? document.body.innerText.slice(0, ` + "20000" + `) : "", links, forms, alerts};
})()`

// snapshot reads the current page if the model may see it; otherwise it leaves it.
func (s *Session) snapshot(tab context.Context, status int) (Page, error) {
	loc, err := chromedp.Run(tab, chromedp.Location())
	if err != nil {
		return Page{}, err
	}
	if !s.allowed(loc) {
		_ = chromedp.Do(tab, chromedp.Navigate("about:blank"))
		return Page{}, fmt.Errorf("%w: it ended at %s, which the model may not see; the browser left it", ErrOffSite, hostOf(loc))
	}
	p, err := chromedp.Run(tab, chromedp.Evaluate[Page](readPage))
	if err != nil {
		return Page{}, fmt.Errorf("browser: reading the page: %w", err)
	}
	p.Status = status
	return p, nil
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Scheme + "://" + u.Host
	}
	return "another page"
}

// Open loads rawURL, which must be on the Company's website, and returns the page.
func (s *Session) Open(ctx context.Context, rawURL string) (Page, error) {
	if u, err := url.Parse(rawURL); err == nil && ambiguousPath(u) != "" {
		return Page{}, fmt.Errorf("%w: %s has the path segment %q, a dot-segment or an encoded slash or backslash that the browser or server would resolve to another page; open the page by its plain address", ErrRefused, rawURL, ambiguousPath(u))
	}
	if !s.allowed(rawURL) {
		return Page{}, fmt.Errorf("%w: %s is not a page of %s the model may open", ErrRefused, rawURL, strings.Join(s.cfg.Website, ", "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed()
	var p Page
	err := s.step(ctx, func(tab context.Context) error {
		resp, err := chromedp.Run(tab, chromedp.NavigateResponse(rawURL))
		if err != nil {
			return fmt.Errorf("browser: loading %s: %w", rawURL, err)
		}
		p, err = s.snapshot(tab, int(resp.Status))
		return err
	})
	return p, err
}

// Read returns the current page.
func (s *Session) Read(ctx context.Context) (Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var p Page
	err := s.step(ctx, func(tab context.Context) error {
		var err error
		p, err = s.snapshot(tab, 0)
		return err
	})
	return p, err
}

// Location returns the current URL, "" when the model may not see the page.
func (s *Session) Location(ctx context.Context) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var loc string
	_ = s.step(ctx, func(tab context.Context) error {
		var err error
		loc, err = chromedp.Run(tab, chromedp.Location())
		return err
	})
	if !s.allowed(loc) {
		return ""
	}
	return loc
}

// Screenshot returns a PNG of the viewport of the current page (refused when the model may not
// see it).
func (s *Session) Screenshot(ctx context.Context) ([]byte, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var png []byte
	var loc string
	err := s.step(ctx, func(tab context.Context) error {
		var err error
		if loc, err = chromedp.Run(tab, chromedp.Location()); err != nil {
			return err
		}
		if !s.allowed(loc) {
			return fmt.Errorf("%w: no screenshot of %s", ErrOffSite, hostOf(loc))
		}
		png, err = chromedp.Run(tab, chromedp.CaptureScreenshot())
		return err
	})
	return png, loc, err
}

const fillForm = `((name, values) => {
  const f = Array.from(document.forms).find(f => (f.getAttribute("name") || f.id) === name);
  if (!f) return "no form named " + JSON.stringify(name) + " on this page";
  for (const [k, v] of Object.entries(values)) {
    const el = f.elements.namedItem(k);
    if (!el || el.type === "hidden") return "the form has no visible field named " + JSON.stringify(k);
    if (el instanceof RadioNodeList) return "the field " + JSON.stringify(k) + " is a group; name one input";
    if (el.type === "checkbox" || el.type === "radio") el.checked = v !== "" && v !== "false";
    else el.value = v;
    el.dispatchEvent(new Event("input", {bubbles: true}));
    el.dispatchEvent(new Event("change", {bubbles: true}));
  }
  return "";
})`

// Submit fills the visible fields of the form named form (its name or id) with values and
// submits it. The form must post to the Company's website (never to the browser-session
// endpoint).
func (s *Session) Submit(ctx context.Context, form string, values map[string]string) (Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed()
	var p Page
	err := s.step(ctx, func(tab context.Context) error {
		cur, err := s.snapshot(tab, 0)
		if err != nil {
			return err
		}
		var target *Form
		for i := range cur.Forms {
			if cur.Forms[i].Name == form {
				target = &cur.Forms[i]
				break
			}
		}
		if target == nil {
			return fmt.Errorf("%w: no form named %q on %s", ErrRefused, form, cur.URL)
		}
		if !s.allowed(target.Action) {
			return fmt.Errorf("%w: the form %q posts to %s", ErrOffSite, form, hostOf(target.Action))
		}
		args, err := json.Marshal([]any{form, values})
		if err != nil {
			return err
		}
		nameJSON, _ := json.Marshal(form)
		msg, err := chromedp.Run(tab, chromedp.Evaluate[string](fillForm+".apply(null, "+string(args)+")"))
		if err != nil {
			return fmt.Errorf("browser: filling the form %q: %w", form, err)
		}
		if msg != "" {
			return fmt.Errorf("%w: %s", ErrRefused, msg)
		}
		submit := func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Evaluate[bool](`((name) => { const f = Array.from(document.forms).find(f => (f.getAttribute("name") || f.id) === name); f.requestSubmit ? f.requestSubmit() : f.submit(); return true; })(`+string(nameJSON)+`)`)(ctx, t)
			return chromedp.Void{}, err
		}
		resp, err := chromedp.RunResponse(tab, submit)
		if err != nil {
			return fmt.Errorf("browser: submitting the form %q: %w", form, err)
		}
		p, err = s.snapshot(tab, int(resp.Status))
		return err
	})
	return p, err
}

// Back goes to the previous page of the website.
func (s *Session) Back(ctx context.Context) (Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed()
	var p Page
	err := s.step(ctx, func(tab context.Context) error {
		h, err := chromedp.Call(tab, page.GetNavigationHistory, cdp.Empty{})
		if err != nil {
			return err
		}
		if h.CurrentIndex < 1 || !s.allowed(h.Entries[h.CurrentIndex-1].URL) {
			return errors.New("browser: there is no earlier page of the website to go back to")
		}
		if err := chromedp.Do(tab, chromedp.NavigateBack()); err != nil {
			return err
		}
		p, err = s.snapshot(tab, 0)
		return err
	})
	return p, err
}

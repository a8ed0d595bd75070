package app

import (
	"fmt"
	"time"

	"github.com/pkg/browser"
)

// URLOpener opens a URL in the User's browser. In the desktop window it is the same opener
// Wails's runtime.BrowserOpenURL uses ([OpenInBrowser]); the end-to-end test supplies one that
// drives a headless Chromium.
type URLOpener interface {
	OpenURL(url string) error
}

// OpenerFunc adapts a func to [URLOpener].
type OpenerFunc func(url string) error

// OpenURL calls f.
func (f OpenerFunc) OpenURL(url string) error { return f(url) }

// OpenInBrowser opens url in the user's default browser with github.com/pkg/browser, the library
// Wails's runtime.BrowserOpenURL uses on Linux (xdg-open), called directly so that a failure
// reaches the screen (Wails only logs it) and no Wails context is needed. xdg-open may keep
// running while the browser starts: after openWait without an error the URL counts as opened.
// The library writes the opener's output to its package's Stdout and Stderr, which the command
// layer points away from Poppydesk's stdout once at start.
func OpenInBrowser(url string) error {
	done := make(chan error, 1)
	go func() { done <- browser.OpenURL(url) }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("no browser could be started (%v)", err)
		}
		return nil
	case <-time.After(openWait):
		return nil
	}
}

const openWait = 3 * time.Second

package main

// The controlled browser in the window (issue 9, spec 6): a runtime hook that binds
// app.Browser (the Browser view) and gives the model's browser tools the same browsers through
// windowActions.Browser. Each Company Session gets its own Chrome profile under the data
// directory's "browser" folder. In demo mode the browser trusts exactly the reference Company's
// key (--ignore-certificate-errors-spki-list).

import (
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/browser"
)

// windowBrowsers holds each window's model side of the browser (*windowRuntime → BrowserActions).
var windowBrowsers sync.Map

func init() { runtimeHooks = append(runtimeHooks, startBrowser) }

// Browser gives the model's browser tools the window's controlled browser (modelapi.BrowserProvider).
func (w *windowActions) Browser() modelapi.BrowserActions {
	if v, ok := windowBrowsers.Load(w.rt); ok {
		return v.(modelapi.BrowserActions)
	}
	return nil
}

func startBrowser(_ context.Context, rt *windowRuntime, _ *windowOptions) error {
	if bindingsBuild {
		rt.services = append(rt.services, &app.Browser{})
		return nil
	}
	mgr := &browser.Manager{Root: filepath.Join(rt.paths.Data, "browser"), Base: browser.Options{Logger: rt.log}}
	var once sync.Once
	var mu sync.Mutex
	var oc *oauth.Client
	var ocEngine *engine.Engine
	resolve := func() (*engine.Engine, browserjoin.StatusFunc) {
		w := windowEngineOf(rt)
		if w == nil || w.eng == nil || w.secrets == nil {
			return nil, nil
		}
		once.Do(func() {
			if w.demo != nil && w.demo.srv != nil {
				if spki := leafSPKIOf(w.demo.srv); spki != "" {
					mgr.Base.TrustSPKI = []string{spki}
				}
			}
		})
		mu.Lock()
		defer mu.Unlock()
		if oc == nil || ocEngine != w.eng {
			c, err := oauth.New(oauth.Config{Transport: w.eng.Transport(), Identity: w.eng.Agent(), Secrets: w.secrets, Logger: w.eng.Logger()})
			if err != nil {
				rt.log.Warn("browser: the sign-in state reader could not start; browsing signed out", "err", err)
				return w.eng, nil
			}
			oc, ocEngine = c, w.eng
		}
		return w.eng, browserjoin.OAuthStatus(oc)
	}
	svc, model := app.NewBrowser(app.BrowserConfig{Manager: mgr, Engine: resolve, Emitter: rt.relay, Log: rt.log})
	windowBrowsers.Store(rt, model)
	go func() {
		<-rt.lifecycle.Context().Done()
		mgr.Close()
		windowBrowsers.Delete(rt)
	}()
	rt.services = append(rt.services, svc)
	return nil
}

// leafSPKIOf returns the SPKI hash of the demo Company's leaf certificate (served on loopback),
// "" when it cannot be read.
func leafSPKIOf(s *poppytest.Server) string {
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), &tls.Config{ServerName: poppytest.ShopHost, RootCAs: s.CA().Pool()})
	if err != nil {
		return ""
	}
	defer conn.Close()
	return browser.SPKIHash(conn.ConnectionState().PeerCertificates[0])
}

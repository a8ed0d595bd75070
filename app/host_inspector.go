package app

// What the Inspector shows (agentcore/inspect): the exchange log the engine writes, the findings
// of the rules Companies broke, and in the demo the reference Company's faults.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// EventInspector says an exchange or a finding was recorded; the window lists again.
const EventInspector = "inspector:changed"

// InspectorMax bounds how many of the newest exchanges [Host.Exchanges] reads (the log itself
// keeps a window of 30 days and 200 MiB).
const InspectorMax = 5000

// exchangeRecorded is the engine's OnExchange: the exchange's findings go to the Host's
// findings log, and the window hears of it.
func (h *Host) exchangeRecorded(ex store.Exchange) {
	h.identifiers.Observe(ex)
	if d, err := inspect.ParseDetails(ex.Details); err == nil {
		for _, f := range d.Findings {
			f.Exchange, f.At = ex.ID, ex.At
			if ex.Company != "" || f.Company == "" {
				f.Company = ex.Company
			}
			h.findings.Add(f)
		}
	}
	h.relay.Emit(EventInspector)
}

// Findings is the Host's findings log (nil when the engine does not run). It is an
// inspect.Reporter for the parts that notice a broken rule while they work.
func (h *Host) Findings() *inspect.Log { return h.findings }

// findingsReporter is the Reporter the Host's parts report broken rules to: the findings log,
// or inspect.Discard when the engine does not run (no log exists then).
func (h *Host) findingsReporter() inspect.Reporter {
	if h.findings == nil {
		return inspect.Discard
	}
	return h.findings
}

// CurlOptions are what an exported curl command of a request to rawURL needs to work as
// exported: for a Company under development (a developer host), developer mode's CA file as
// --cacert when it is a file on disk, and a --resolve to loopback for a host curl does not
// resolve there by itself (anything but *.localhost). None for any other URL.
func (h *Host) CurlOptions(rawURL string) inspect.CurlOptions {
	d := h.cfg.Developer
	u, err := url.Parse(rawURL)
	if !d.On() || err != nil || h.engine == nil || !h.engine.Transport().IsDevHost(u.Hostname()) {
		return inspect.CurlOptions{}
	}
	var o inspect.CurlOptions
	if d.CAFile != "" {
		if abs, err := filepath.Abs(d.CAFile); err == nil {
			if st, err := os.Stat(abs); err == nil && st.Mode().IsRegular() {
				o.CAFile = abs
			}
		}
	}
	if host := strings.ToLower(u.Hostname()); host != "localhost" && !strings.HasSuffix(host, ".localhost") {
		port := u.Port()
		if port == "" {
			port = "443"
		}
		o.Resolve = []string{host + ":" + port + ":127.0.0.1"}
	}
	return o
}

// Exchanges reads the exchange log's newest InspectorMax exchanges, newest first, without their
// headers and bodies, a page at a time down the primary key, once the engine's recent exchanges
// are written; capped says the log holds older ones too.
func (h *Host) Exchanges(ctx context.Context) (out []store.Exchange, capped bool, err error) {
	if err := h.Refusal(); err != nil {
		return nil, false, err
	}
	if err := h.engine.FlushExchanges(ctx); err != nil {
		return nil, false, err
	}
	q := vault.ExchangeQuery{Newest: true, NoBodies: true}
	for len(out) <= InspectorMax {
		q.Limit = min(500, InspectorMax+1-len(out)) // one more than shown says whether older ones exist
		page, err := h.state.ListExchanges(ctx, q)
		if err != nil {
			return nil, false, fmt.Errorf("reading the exchange log failed: %w", err)
		}
		out = append(out, page...)
		if len(page) < q.Limit {
			break
		}
		q.BeforeID = page[len(page)-1].ID
	}
	if len(out) > InspectorMax {
		return out[:InspectorMax], true, nil
	}
	return out, false, nil
}

// ExchangesByID reads the exchanges with these IDs whole (headers and bodies, secrets masked),
// once the engine's recent exchanges are written; an error when none of them is in the log.
func (h *Host) ExchangesByID(ctx context.Context, ids []int64) ([]store.Exchange, error) {
	if err := h.Refusal(); err != nil {
		return nil, err
	}
	if err := h.engine.FlushExchanges(ctx); err != nil {
		return nil, err
	}
	out, err := h.state.ListExchanges(ctx, vault.ExchangeQuery{IDs: ids, Limit: len(ids)})
	if err != nil {
		return nil, fmt.Errorf("reading the exchange log failed: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("those exchanges are no longer in the log (it keeps a window of the latest ones)")
	}
	return out, nil
}

// SetDemoFault switches a fault of the demo's reference Company (refcompany.AllFaults).
func (h *Host) SetDemoFault(name string, on bool) error {
	if h == nil || h.demo == nil {
		return errors.New("the reference Company's faults can be switched only in the demo (poppydesk demo)")
	}
	if err := h.demo.srv.SetAnyFault(name, on); err != nil {
		return err
	}
	h.log.Info("demo: reference Company fault switched", "fault", name, "on", on)
	return nil
}

package sessioncheck

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
)

const crypto256 = crypto.SHA256

// clientEntry is a Personal Agent's fetched client metadata and key set (spec 4.1, 5.3 step 1).
type clientEntry struct {
	jwksURI   string
	keys      jwk.Set
	fetched   time.Time
	expires   time.Time
	err       *Error // a failed fetch, cached for negativeTTL
	refetched time.Time
}

// clientFor returns the cached or freshly fetched metadata and keys of client_id iss.
func (v *Verifier) clientFor(ctx context.Context, iss string) (*clientEntry, *Error) {
	now := v.cfg.Now()
	v.mu.Lock()
	ce := v.clients[iss]
	v.mu.Unlock()
	if ce != nil && now.Before(ce.expires) {
		if ce.err != nil {
			return nil, ce.err
		}
		return ce, nil
	}
	ce, e := v.fetchClient(ctx, iss, now)
	if e != nil {
		ce = &clientEntry{err: e, expires: now.Add(negativeTTL)}
	}
	v.mu.Lock()
	v.clients[iss] = ce
	v.mu.Unlock()
	return ce, e
}

// refetchKeys fetches the key set again when a delegation names an unknown kid, at most once
// per refetchInterval per client.
func (v *Verifier) refetchKeys(ctx context.Context, iss string, ce *clientEntry, now time.Time) (*clientEntry, *Error) {
	if now.Sub(ce.fetched) < refetchInterval || now.Sub(ce.refetched) < refetchInterval {
		return ce, nil
	}
	fresh, e := v.fetchClient(ctx, iss, now)
	if e != nil {
		return nil, e
	}
	fresh.refetched = now
	v.mu.Lock()
	v.clients[iss] = fresh
	v.mu.Unlock()
	return fresh, nil
}

func (v *Verifier) fetchClient(ctx context.Context, iss string, now time.Time) (*clientEntry, *Error) {
	md, e := v.FetchClient(ctx, iss)
	if e != nil {
		return nil, e
	}
	return &clientEntry{jwksURI: md.JWKSURI, keys: md.Keys, fetched: now, expires: now.Add(v.cfg.MetadataTTL)}, nil
}

// ClientMetadata is a Personal Agent's client metadata document (spec 4.1) as fetched from its
// client_id, with the key set at its jwks_uri.
type ClientMetadata struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	JWKSURI                 string   `json:"jwks_uri"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	// Keys are the public keys at JWKSURI.
	Keys jwk.Set `json:"-"`
}

// FetchClient fetches the client metadata at clientID and the key set at its jwks_uri, each
// without following redirects and within Config.FetchTimeout, and checks them (spec 4.1, 5.3
// step 1): client_id is an HTTPS URL and the document's client_id equals it, jwks_uri is an HTTPS
// URL on the same host, and the key set holds public keys only. It caches nothing (the Verifier
// keeps what it fetches for Config.MetadataTTL); a Company's authorization server checking a
// client assertion (RFC 7523) uses it too. Errors are *Error with invalid_session.
func (v *Verifier) FetchClient(ctx context.Context, clientID string) (*ClientMetadata, *Error) {
	cid, err := url.Parse(clientID)
	if err != nil || cid.Scheme != "https" || cid.Host == "" || cid.Fragment != "" || cid.User != nil {
		return nil, invalid("the client_id %q is not an HTTPS client_id URL (spec 3, 4.1)", clientID)
	}
	body, e := v.get(ctx, clientID, "client metadata")
	if e != nil {
		return nil, e
	}
	var md ClientMetadata
	// A member of another type than expected (redirect_uris as a string, say) is left empty;
	// client_id and jwks_uri are checked below.
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(body, &md); err != nil && !errors.As(err, &te) {
		return nil, invalid("the client metadata at %s is not a JSON object (spec 4.1)", clientID)
	}
	if md.ClientID != clientID {
		return nil, invalid("the client metadata at %s has client_id %q; it must equal the URL it was fetched from (spec 4.1)", clientID, md.ClientID)
	}
	ju, err := url.Parse(md.JWKSURI)
	if err != nil || ju.Scheme != "https" || !strings.EqualFold(ju.Host, cid.Host) {
		return nil, invalid("the client metadata's jwks_uri %q must be an HTTPS URL on the same host as client_id (spec 4.1)", md.JWKSURI)
	}
	jb, e := v.get(ctx, md.JWKSURI, "JWKS")
	if e != nil {
		return nil, e
	}
	set, err := jwk.Parse(jb)
	if err != nil {
		return nil, invalid("the key set at %s is not a valid JWKS (spec 4.1)", md.JWKSURI)
	}
	if set.Len() == 0 {
		return nil, invalid("the key set at %s has no keys (spec 4.1)", md.JWKSURI)
	}
	for i := range set.Len() {
		k, _ := set.Key(i)
		if priv, err := jwk.IsPrivateKey(k); err != nil || priv {
			return nil, invalid("the key set at %s contains a private or symmetric key; it must hold public keys only (spec 4.1)", md.JWKSURI)
		}
	}
	md.Keys = set
	return &md, nil
}

// get fetches a document without following redirects (spec 5.3 step 1, CIMD §5).
func (v *Verifier) get(ctx context.Context, target, what string) ([]byte, *Error) {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.FetchTimeout)
	defer cancel()
	// The deadline passed: this one, or the HTTP client's own (which may end the exchange a
	// moment before it and say so with an error matching context.DeadlineExceeded).
	timedOut := func(err error) bool {
		return errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, invalid("cannot request the %s at %s (spec 5.3)", what, target)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		v.cfg.Logger.InfoContext(ctx, "sessioncheck: fetch failed", "what", what, "url", target, "err", err)
		if timedOut(err) {
			return nil, invalid("the Personal Agent's %s at %s did not answer within %s (spec 5.3 step 1)", what, target, v.cfg.FetchTimeout)
		}
		return nil, invalid("cannot fetch the Personal Agent's %s at %s (spec 5.3 step 1)", what, target)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, invalid("the Personal Agent's %s at %s answered with a redirect, which is not followed (spec 5.3 step 1, CIMD §5)", what, target)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, invalid("the Personal Agent's %s at %s answered HTTP %d (spec 5.3 step 1)", what, target, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		if timedOut(err) {
			return nil, invalid("the Personal Agent's %s at %s did not answer within %s (spec 5.3 step 1)", what, target, v.cfg.FetchTimeout)
		}
		return nil, invalid("cannot read the Personal Agent's %s at %s (spec 5.3 step 1)", what, target)
	}
	if len(body) > maxDocument {
		return nil, invalid("the Personal Agent's %s at %s is larger than %d bytes", what, target, maxDocument)
	}
	return body, nil
}

// defaultClient refuses loopback, private, link-local and other non-public addresses at
// connection time (spec 3 "Redirects and addresses"), so a client_id cannot aim the Company at
// its own internal servers.
func defaultClient() *http.Client {
	d := &net.Dialer{
		Timeout: 5 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("unexpected address %q", address)
			}
			if !publicAddr(ap.Addr()) {
				return errors.New("refusing to connect to a loopback, private or link-local address given by a Personal Agent (spec 3)")
			}
			return nil
		},
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = d.DialContext
	t.Proxy = nil
	return &http.Client{Transport: t, Timeout: 10 * time.Second}
}

func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsGlobalUnicast() && !a.IsPrivate() && !a.IsLoopback() && !a.IsLinkLocalUnicast()
}

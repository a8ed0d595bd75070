package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/discovery"
)

// DevicePrompt is what the window shows for Device Sign-In (spec 4.3): the Company's name and
// domain with the link and the user code. It never carries the device_code.
type DevicePrompt struct {
	Organization string `json:"organization"`
	Domain       string `json:"domain"`
	// VerificationURI and UserCode are shown together; VerificationURIComplete (may be empty)
	// is for a link or QR code. Opening the link does not approve anything by itself.
	VerificationURI         string        `json:"verification_uri"`
	VerificationURIComplete string        `json:"verification_uri_complete,omitempty"`
	UserCode                string        `json:"user_code"`
	ExpiresAt               time.Time     `json:"expires_at"`
	Interval                time.Duration `json:"interval"`
	Requested               []ScopeInfo   `json:"requested"`
}

// DeviceFlow is one Device Sign-In (RFC 8628). Its device_code is unexported and never leaves
// the engine (spec 4.3, 10.2).
type DeviceFlow struct {
	Prompt DevicePrompt

	c          *Client
	co         *discovery.Company
	account    string
	scopes     []string
	deviceCode string
	key        bool

	mu       sync.Mutex
	interval time.Duration
	cancel   chan struct{}
	once     sync.Once
}

// Held lists the flow's own secret (its device code), for text that leaves Poppydesk to be
// cleaned of it (spec 10.2). Never shown or logged.
func (f *DeviceFlow) Held() []string { return []string{f.deviceCode} }

// StartDevice asks the Company's device_authorization_endpoint for a code (RFC 8628 §3.1, with
// the client assertion and the planned scopes), and checks the verification link's host
// before anything is exposed (spec 4.3).
func (c *Client) StartDevice(ctx context.Context, req SignInRequest) (*DeviceFlow, error) {
	st, err := c.prepareSignIn(ctx, req, "Device Sign-In (spec 3.2, 4.3)", func(co *discovery.Company, as *discovery.ASMetadata) bool {
		return co.SignIn.Device && as.DeviceAuthorizationEndpoint != ""
	})
	if err != nil {
		return nil, err
	}
	co, as, scopes, held := st.co, st.as, st.scopes, st.held
	const step = "device authorization request"
	body, err := c.postForm(ctx, co.Issuer, as.DeviceAuthorizationEndpoint, step, url.Values{"scope": {strings.Join(scopes, " ")}}, nil)
	if err != nil {
		return nil, err
	}
	var dr struct {
		DeviceCode              string      `json:"device_code"`
		UserCode                string      `json:"user_code"`
		VerificationURI         string      `json:"verification_uri"`
		VerificationURIComplete string      `json:"verification_uri_complete"`
		ExpiresIn               json.Number `json:"expires_in"`
		Interval                json.Number `json:"interval"`
	}
	if err := json.Unmarshal(body, &dr); err != nil || dr.DeviceCode == "" || dr.UserCode == "" || dr.VerificationURI == "" {
		return nil, companyErr(step, "the response lacks device_code, user_code or verification_uri (RFC 8628 §3.2)")
	}
	for _, link := range []string{dr.VerificationURI, dr.VerificationURIComplete} {
		if link == "" {
			continue
		}
		if err := checkDeviceLink(co, link); err != nil {
			return nil, &Error{Step: step, Problem: err.Error()}
		}
	}
	expiresIn, interval, err := deviceTiming(dr.ExpiresIn, dr.Interval)
	if err != nil {
		return nil, companyErr(step, err.Error())
	}
	key, err := c.dpopKey(ctx, co, req.Account)
	if err != nil {
		return nil, err
	}
	f := &DeviceFlow{c: c, co: co, account: req.Account, scopes: scopes, deviceCode: dr.DeviceCode, key: key != nil,
		interval: interval, cancel: make(chan struct{})}
	f.Prompt = DevicePrompt{Organization: co.Organization.Name, Domain: co.Organization.Domain, VerificationURI: dr.VerificationURI,
		VerificationURIComplete: dr.VerificationURIComplete, UserCode: dr.UserCode, ExpiresAt: c.now().Add(expiresIn),
		Interval: f.interval, Requested: Describe(co, scopes, held)}
	return f, nil
}

// maxDeviceExpiry bounds the countdown of a device code. RFC 8628 sets no limit; a longer
// expires_in from the Company is shortened to it (the User starts again), which also keeps the
// arithmetic below from overflowing on hostile numbers.
const maxDeviceExpiry = 24 * time.Hour

// deviceTiming checks expires_in and interval of a device authorization response (RFC 8628
// §3.2) and returns them as durations: expires_in positive (at most maxDeviceExpiry), interval
// 5 s when absent or not a positive integer, and never longer than expires_in. Values that
// don't fit time.Duration would otherwise wrap to a negative poll interval: a busy loop.
func deviceTiming(expiresIn, interval json.Number) (time.Duration, time.Duration, error) {
	exp, err := expiresIn.Int64()
	if err != nil || exp <= 0 {
		return 0, 0, errors.New("expires_in is missing or not a positive integer (RFC 8628 §3.2)")
	}
	exp = min(exp, int64(maxDeviceExpiry/time.Second))
	iv, err := interval.Int64()
	if err != nil || iv <= 0 {
		iv = 5 // RFC 8628 §3.2: default 5 seconds
	}
	if iv > exp {
		return 0, 0, fmt.Errorf("interval %d s is longer than the code's lifetime of %d s, so the code would expire before the first poll (RFC 8628 §3.2)", iv, exp)
	}
	return time.Duration(exp) * time.Second, time.Duration(iv) * time.Second, nil
}

// checkDeviceLink checks that link is HTTPS and its host is the issuer's host or the host of a
// URL in protected_resources, or a subdomain of either, on the same port (spec 4.3).
func checkDeviceLink(co *discovery.Company, link string) error {
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return fmt.Errorf("the sign-in link %q is not an HTTPS URL (spec 3, 4.3); Poppydesk does not show it", link)
	}
	allowed := append([]string{co.Issuer}, co.AuthorizationServer.ProtectedResources...)
	for _, a := range allowed {
		au, err := url.Parse(a)
		if err != nil || au.Host == "" {
			continue
		}
		if port(u) != port(au) {
			continue
		}
		h, ah := strings.ToLower(u.Hostname()), strings.ToLower(au.Hostname())
		if h == ah || strings.HasSuffix(h, "."+ah) {
			return nil
		}
	}
	return fmt.Errorf("the sign-in link's host %q is neither the issuer's host nor a host the issuer lists in protected_resources (nor a subdomain of one); another Company's page could be passed off as %s's, so Poppydesk does not show it (spec 4.3)", u.Host, co.Organization.Name)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return "443"
}

// Remaining is the countdown until the code expires.
func (f *DeviceFlow) Remaining() time.Duration {
	d := f.Prompt.ExpiresAt.Sub(f.c.now())
	if d < 0 {
		return 0
	}
	return d
}

// Interval is the current polling interval (it grows by 5 s on each slow_down).
func (f *DeviceFlow) Interval() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.interval
}

func (f *DeviceFlow) cancelled() bool {
	select {
	case <-f.cancel:
		return true
	default:
		return false
	}
}

// Cancel stops polling; Wait returns ErrCancelled.
func (f *DeviceFlow) Cancel() { f.once.Do(func() { close(f.cancel) }) }

// Wait polls the token endpoint every interval until the User approves or declines, or the code
// expires (RFC 8628 §3.4, §3.5), then stores the tokens (spec 4.7).
func (f *DeviceFlow) Wait(ctx context.Context) (*Result, error) {
	c, co := f.c, f.co
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-f.cancel:
			stop()
		case <-ctx.Done():
		}
	}()
	const step = "Device Sign-In poll"
	for {
		if f.Remaining() <= 0 {
			return nil, fmt.Errorf("%w: the code expired before it was approved; start Device Sign-In again (RFC 8628 §3.5)", ErrTimedOut)
		}
		// Never sleep past the code's expiry: the loop then ends with ErrTimedOut at once.
		if err := c.sleep(ctx, min(f.Interval(), f.Remaining())); err != nil || f.cancelled() {
			if f.cancelled() {
				return nil, ErrCancelled
			}
			return nil, err
		}
		var key *dpopSigner
		if f.key {
			k, err := c.dpopKey(ctx, co, f.account)
			if err != nil {
				return nil, err
			}
			key = k
		}
		body, err := c.postForm(ctx, co.Issuer, co.AuthorizationServer.TokenEndpoint, step,
			url.Values{"grant_type": {GrantDeviceCode}, "device_code": {f.deviceCode}}, key)
		var oe *Error
		switch {
		case err == nil:
			// Tokens the Company issued are kept even if Cancel raced with this poll.
			unlock := c.lock(co.Identifier, f.account)
			res, err := c.finishSignIn(context.WithoutCancel(ctx), co, f.account, step, body, f.scopes, key != nil)
			unlock()
			return res, err
		case f.cancelled():
			return nil, ErrCancelled
		case !errors.As(err, &oe):
			return nil, err
		case oe.Code == "authorization_pending":
			continue
		case oe.Code == "slow_down":
			f.mu.Lock()
			f.interval += 5 * time.Second // RFC 8628 §3.5
			f.mu.Unlock()
			continue
		case oe.Code == "access_denied":
			oe.wrapped = ErrDeclined
			return nil, oe
		case oe.Code == "expired_token":
			oe.wrapped = ErrTimedOut
			return nil, oe
		default:
			return nil, err
		}
	}
}

// String keeps the device_code out of fmt output (spec 4.3, 10.2).
func (f *DeviceFlow) String() string {
	return fmt.Sprintf("DeviceFlow{company: %s, account: %q, scopes: %q}", f.co.Identifier, f.account, f.scopes)
}

// GoString: see String.
func (f *DeviceFlow) GoString() string { return f.String() }

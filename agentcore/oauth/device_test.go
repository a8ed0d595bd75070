package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
)

// approveOnPage plays the person on the verification page: opening the link only shows the
// request; the form post approves or denies it.
func (f *fixture) approveOnPage(t testing.TB, link, userCode, decision string, scopes []string) {
	t.Helper()
	hc := f.tr.NoRedirectClient()
	resp, err := hc.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), userCode) || !strings.Contains(string(page), `id="approve"`) {
		t.Fatalf("verification page: HTTP %d\n%s", resp.StatusCode, page)
	}
	resp, err = hc.PostForm(f.s.Issuer()+"/device", url.Values{"user_code": {userCode}, "decision": {decision}, "account": {"alex@shop.example"}, "scope": scopes})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("verification form: HTTP %d", resp.StatusCode)
	}
}

func TestDeviceSignIn(t *testing.T) {
	both := []string{"orders:read", "orders:write"}
	tests := []struct {
		name      string
		faults    []string
		act       func(f *fixture, flow *oauth.DeviceFlow, n int) // runs after poll wait n
		wantErr   func(error) bool
		wantSleep []time.Duration // the poll waits, in order (prefix)
	}{
		{name: "approved after two pending polls", act: func(f *fixture, flow *oauth.DeviceFlow, n int) {
			if n == 3 {
				f.approveOnPage(t, flow.Prompt.VerificationURIComplete, flow.Prompt.UserCode, "approve", both)
			}
		}, wantSleep: []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second}},
		{name: "slow_down adds 5 s", faults: []string{refcompany.FaultDeviceSlowDown}, act: func(f *fixture, flow *oauth.DeviceFlow, n int) {
			if n == 2 {
				f.approveOnPage(t, flow.Prompt.VerificationURI+"?user_code="+url.QueryEscape(flow.Prompt.UserCode), flow.Prompt.UserCode, "approve", both)
			}
		}, wantSleep: []time.Duration{5 * time.Second, 10 * time.Second}},
		{name: "denied", act: func(f *fixture, flow *oauth.DeviceFlow, n int) {
			if n == 2 {
				f.approveOnPage(t, flow.Prompt.VerificationURIComplete, flow.Prompt.UserCode, "deny", nil)
			}
		}, wantErr: func(err error) bool { return errors.Is(err, oauth.ErrDeclined) && oauth.IsCode(err, "access_denied") }},
		{name: "expired at the Company", act: func(f *fixture, flow *oauth.DeviceFlow, n int) {
			if n == 2 {
				f.clock.Advance(9*time.Minute + 56*time.Second) // past the Company's 10 minutes, within the engine's countdown skew
			}
		}, wantErr: func(err error) bool { return errors.Is(err, oauth.ErrTimedOut) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{faults: tc.faults, fakeTime: true})
			ctx := context.Background()
			flow, err := f.c.StartDevice(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: both})
			if err != nil {
				t.Fatal(err)
			}
			p := flow.Prompt
			if p.Organization != "Shop (reference Company)" || p.Domain != f.s.Domain || !strings.HasPrefix(p.VerificationURI, f.s.Issuer()) ||
				p.UserCode == "" || flow.Remaining() != 10*time.Minute || len(p.Requested) != 2 {
				t.Fatalf("prompt %+v, remaining %s", p, flow.Remaining())
			}
			f.onSleep = func(n int) { tc.act(f, flow, n) }
			res, err := flow.Wait(ctx)
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("Wait = %v, want the table's error", err)
				}
				if len(f.bundle(t, "personal").Tokens) != 0 {
					t.Error("tokens stored after a failed Device Sign-In")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Granted) != 2 || defaultToken(f.bundle(t, "personal")).RefreshToken == "" {
				t.Errorf("result %+v", res)
			}
			for i, d := range tc.wantSleep {
				if i >= len(f.sleeps) || f.sleeps[i] != d {
					t.Fatalf("poll waits %v, want prefix %v", f.sleeps, tc.wantSleep)
				}
			}
		})
	}
}

func TestDeviceSignInChecksLinkBeforeShowing(t *testing.T) {
	f := newFixture(t, fixtureOpts{faults: []string{refcompany.FaultDeviceForeignHost}})
	flow, err := f.c.StartDevice(context.Background(), oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: []string{"orders:read"}})
	if err == nil || flow != nil {
		t.Fatalf("a foreign sign-in link was accepted: %v", flow)
	}
	if !strings.Contains(err.Error(), refcompany.ForeignDeviceHost) || !strings.Contains(err.Error(), "spec 4.3") {
		t.Errorf("error %q does not name the host and spec 4.3", err)
	}
}

func TestDeviceSignInCancel(t *testing.T) {
	f := newFixture(t, fixtureOpts{fakeTime: true})
	ctx := context.Background()
	flow, err := f.c.StartDevice(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: []string{"orders:read"}})
	if err != nil {
		t.Fatal(err)
	}
	f.onSleep = func(n int) {
		if n == 2 {
			flow.Cancel()
		}
	}
	if _, err := flow.Wait(ctx); !errors.Is(err, oauth.ErrCancelled) {
		t.Fatalf("Wait after Cancel = %v", err)
	}
}

// TestDeviceSignInNeverSleepsPastExpiry: the last poll wait is cut to the code's remaining
// lifetime (RFC 8628 §3.5), so Wait ends with ErrTimedOut at expiry rather than one interval
// later, whatever interval the Company asked for.
func TestDeviceSignInNeverSleepsPastExpiry(t *testing.T) {
	for _, tc := range []struct {
		name      string
		skip      time.Duration // clock advance after the first wait
		wantSleep []time.Duration
	}{
		{name: "3 s left", skip: 9*time.Minute + 52*time.Second, wantSleep: []time.Duration{5 * time.Second, 3 * time.Second}},
		{name: "1 s left", skip: 9*time.Minute + 54*time.Second, wantSleep: []time.Duration{5 * time.Second, time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{fakeTime: true})
			ctx := context.Background()
			flow, err := f.c.StartDevice(ctx, oauth.SignInRequest{Company: f.co, Account: "personal", Scopes: []string{"orders:read"}})
			if err != nil {
				t.Fatal(err)
			}
			f.onSleep = func(n int) {
				if n == 1 {
					f.clock.Advance(tc.skip)
				}
			}
			if _, err := flow.Wait(ctx); !errors.Is(err, oauth.ErrTimedOut) {
				t.Fatalf("Wait = %v, want ErrTimedOut", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.sleeps) < len(tc.wantSleep) {
				t.Fatalf("poll waits %v, want %v", f.sleeps, tc.wantSleep)
			}
			for i, d := range tc.wantSleep {
				if f.sleeps[i] != d {
					t.Fatalf("poll waits %v, want %v", f.sleeps, tc.wantSleep)
				}
			}
		})
	}
}

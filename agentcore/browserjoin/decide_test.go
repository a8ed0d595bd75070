package browserjoin

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	const ep = "https://shop.example/poppy/browser-session"
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	out := Account{}
	in := Account{Account: "a", SignedIn: true, Scopes: []string{"orders:read"}}
	in2 := Account{Account: "a", SignedIn: true, Scopes: []string{"orders:write", "orders:read"}}
	// downgraded: the keyring said signed in with orders:read, the Company refused the token in
	// step 2, and the browser joined signed out at t0.
	downgraded := &Joined{Endpoint: ep, Account: Account{Account: "a"}, At: t0, Downgraded: true, Requested: in}
	for _, tc := range []struct {
		name       string
		last       *Joined
		endpoint   string
		now        Account
		recognized bool
		at         time.Time
		want       bool
	}{
		{"no endpoint: a signed-out visitor", nil, "", in, true, t0, false},
		{"first browsing", nil, ep, out, true, t0, true},
		{"nothing changed", &Joined{Endpoint: ep}, ep, out, true, t0, false},
		{"signed in since", &Joined{Endpoint: ep}, ep, in, true, t0, true},
		{"signed out since", &Joined{Endpoint: ep, Account: in}, ep, out, true, t0, true},
		{"scopes changed", &Joined{Endpoint: ep, Account: in}, ep, in2, true, t0, true},
		{"same scopes in another order", &Joined{Endpoint: ep, Account: in2}, ep, Account{Account: "a", SignedIn: true, Scopes: []string{"orders:read", "orders:write"}}, true, t0, false},
		{"website forgot the Session", &Joined{Endpoint: ep, Account: in}, ep, in, false, t0, true},
		{"another endpoint", &Joined{Endpoint: ep + "2"}, ep, out, true, t0, true},
		{"downgraded, same sign-in: no rejoin loop", downgraded, ep, in, true, t0.Add(time.Minute), false},
		{"downgraded, same sign-in just before the retry time", downgraded, ep, in, true, t0.Add(DowngradeRetry - time.Second), false},
		{"downgraded, retry time passed", downgraded, ep, in, true, t0.Add(DowngradeRetry), true},
		{"downgraded, scopes changed", downgraded, ep, in2, true, t0.Add(time.Minute), true},
		{"downgraded, another account", downgraded, ep, Account{Account: "b", SignedIn: true, Scopes: in.Scopes}, true, t0.Add(time.Minute), true},
		{"downgraded, signed out since: already signed out", downgraded, ep, Account{Account: "a"}, true, t0.Add(time.Minute), false},
		{"downgraded, website forgot the Session", downgraded, ep, in, false, t0.Add(time.Minute), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.last, tc.endpoint, tc.now, tc.recognized, tc.at)
			if d.Join != tc.want || d.Reason == "" {
				t.Errorf("Decide = %+v, want Join %v with a reason", d, tc.want)
			}
		})
	}
}

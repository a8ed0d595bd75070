package browserjoin

import "testing"

func TestDecide(t *testing.T) {
	const ep = "https://shop.example/poppy/browser-session"
	out := Account{}
	in := Account{Account: "a", SignedIn: true, Scopes: []string{"orders:read"}}
	in2 := Account{Account: "a", SignedIn: true, Scopes: []string{"orders:write", "orders:read"}}
	for _, tc := range []struct {
		name       string
		last       *Joined
		endpoint   string
		now        Account
		recognized bool
		want       bool
	}{
		{"no endpoint: a signed-out visitor", nil, "", in, true, false},
		{"first browsing", nil, ep, out, true, true},
		{"nothing changed", &Joined{Endpoint: ep}, ep, out, true, false},
		{"signed in since", &Joined{Endpoint: ep}, ep, in, true, true},
		{"signed out since", &Joined{Endpoint: ep, Account: in}, ep, out, true, true},
		{"scopes changed", &Joined{Endpoint: ep, Account: in}, ep, in2, true, true},
		{"same scopes in another order", &Joined{Endpoint: ep, Account: in2}, ep, Account{Account: "a", SignedIn: true, Scopes: []string{"orders:read", "orders:write"}}, true, false},
		{"website forgot the Session", &Joined{Endpoint: ep, Account: in}, ep, in, false, true},
		{"another endpoint", &Joined{Endpoint: ep + "2"}, ep, out, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.last, tc.endpoint, tc.now, tc.recognized)
			if d.Join != tc.want || d.Reason == "" {
				t.Errorf("Decide = %+v, want Join %v with a reason", d, tc.want)
			}
		})
	}
}

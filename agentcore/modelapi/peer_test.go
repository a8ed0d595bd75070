package modelapi

import "testing"

func TestViaOfArgs(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"/usr/bin/poppydesk", "mcp", "--socket", "/run/x.sock"}, ViaRelay},
		{[]string{"poppydesk", "example-agent", "--company", "shop.localhost:8443"}, "poppydesk example-agent"},
		{[]string{"modelapi.test", "-test.run=^$"}, ViaRelay},
		{[]string{"poppydesk"}, ViaRelay},
		{[]string{}, ViaRelay},
		{[]string{"poppydesk", "Évil\u202e"}, ViaRelay},
	}
	for _, c := range cases {
		if got := viaOfArgs(c.args); got != c.want {
			t.Errorf("viaOfArgs(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

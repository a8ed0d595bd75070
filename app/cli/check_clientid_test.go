package cli

import (
	"context"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/vault"
)

// TestCheckKeepsClientID: `poppydesk check --dev-company` acts as one client_id run after run
// (docs/DEVELOPERS.md section 2). On a fresh data folder it chooses the port and keeps it as the
// window's (the setting the window reads at its start), and runs again on it. While something
// that is not a window with check's keys holds that port, check says so and serves a client_id
// of its own, the same at every run, asking the developer to register it once; --agent-listen
// still chooses the address. The Company named does not exist: the client_id is printed before
// check probes anything.
func TestCheckKeepsClientID(t *testing.T) {
	env := testEnv(t.TempDir())
	paths, err := env.Paths()
	if err != nil {
		t.Fatal(err)
	}
	idRE := regexp.MustCompile(`client_id is (https://agent\.localhost:(\d+)/agent\.json) \((.*)\); the Company must trust`)
	check := func(extra ...string) (id, port, how string) {
		t.Helper()
		_, _, stderr := runCLI(t, env, append([]string{"check", "nothing.localhost:1", "--dev-company", "nothing.localhost:1", "--timeout", "2s"}, extra...)...)
		m := idRE.FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("check names no client_id; stderr:\n%s", stderr)
		}
		return m[1], m[2], m[3]
	}

	first, port, _ := check()
	if again, _, _ := check(); again != first {
		t.Errorf("check's client_id moved from %s to %s between two runs", first, again)
	}
	st, err := vault.OpenState(context.Background(), filepath.Join(paths.Data, app.StateFile), vault.StateOptions{PruneLater: true})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := st.GetSetting(context.Background(), app.SettingDevAgentListen)
	st.Close()
	if err != nil || kept != "127.0.0.1:"+port {
		t.Errorf("the window's kept address is %q (%v), want 127.0.0.1:%s, so the window serves check's client_id", kept, err, port)
	}

	// Another program holds the window's port: check's own client_id, kept.
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	own, _, how := check()
	if own == first || !strings.Contains(how, "register this client_id once") || !strings.Contains(how, first) {
		t.Errorf("with the window's port taken by another program, check acts as %s (%s), want a client_id of its own and words naming %s", own, how, first)
	}
	if again, _, _ := check(); again != own {
		t.Errorf("check's own client_id moved from %s to %s between two runs", own, again)
	}

	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	if id, _, _ := check("--agent-listen", addr); id != "https://agent.localhost:"+addr[strings.LastIndex(addr, ":")+1:]+"/agent.json" {
		t.Errorf("--agent-listen %s gave the client_id %s", addr, id)
	}
}

package modelapi

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/modelapi/endpoint"
)

// peerVia says how a connection reached the socket: when the peer process runs this same
// executable, its subcommand ("poppydesk example-agent"; [ViaRelay] for `poppydesk mcp` and
// when no subcommand is named); [ViaRelay] when it runs the poppydesk-mcp program beside this
// one; "" when it is this process (an in-process client such as the demo's example agent);
// else [ViaSocket].
func peerVia(conn net.Conn) string {
	if _, ok := conn.(*net.UnixConn); !ok {
		return ""
	}
	_, pid, ok := endpoint.PeerCred(conn)
	if !ok {
		return ViaSocket
	}
	if pid == os.Getpid() {
		return ""
	}
	self, err := os.Executable()
	if err != nil {
		return ViaSocket
	}
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	peer, err := os.Readlink(filepath.Join(proc, "exe"))
	switch {
	case err != nil:
		return ViaSocket
	case sameFile(peer, filepath.Join(filepath.Dir(self), "poppydesk-mcp")):
		return ViaRelay
	case !sameFile(peer, self):
		return ViaSocket
	}
	cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
	return viaOfArgs(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"))
}

// viaOfArgs names the subcommand of a Poppydesk command line (args[0] is the program).
func viaOfArgs(args []string) string {
	for _, a := range args[min(1, len(args)):] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if a == "mcp" || !isWord(a) {
			return ViaRelay
		}
		return "poppydesk " + a
	}
	return ViaRelay
}

func isWord(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && r != '-' {
			return false
		}
	}
	return true
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

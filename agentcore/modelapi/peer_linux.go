package modelapi

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/poppydesk/poppydesk/agentcore/modelapi/endpoint"
)

// peerVia says how a Unix socket connection reached the endpoint (viaOfPeer): the peer's process
// id from SO_PEERCRED, its program from /proc/PID/exe and its command line from
// /proc/PID/cmdline. It is "" for another kind of connection and [ViaSocket] when the peer
// cannot be read.
func peerVia(conn net.Conn) string {
	if _, ok := conn.(*net.UnixConn); !ok {
		return ""
	}
	_, pid, ok := endpoint.PeerCred(conn)
	if !ok {
		return ViaSocket
	}
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	exe, err := os.Readlink(filepath.Join(proc, "exe"))
	if err != nil && pid != os.Getpid() {
		return ViaSocket
	}
	return viaOfPeer(pid, exe, func() []string {
		cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
		return strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	})
}

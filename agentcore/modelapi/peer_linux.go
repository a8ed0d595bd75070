package modelapi

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// checkPeer refuses a connection whose peer is another OS user (SO_PEERCRED). The socket's
// 0600 mode and its 0700 directory already stop other users; this is defence in depth.
func checkPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return fmt.Errorf("reading the peer's credentials: %w", err)
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("reading the peer's credentials: %w", err)
	}
	if cerr != nil {
		return fmt.Errorf("reading the peer's credentials: %w", cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("the peer runs as uid %d, not as this user (uid %d)", cred.Uid, os.Getuid())
	}
	return nil
}

// peerVia says how a connection reached the socket: when the peer process runs this same
// executable, its subcommand ("poppydesk example-agent"; [ViaRelay] for `poppydesk mcp` and
// when no subcommand is named); "" when it is this process (an in-process client such as the
// demo's example agent); else [ViaSocket].
func peerVia(conn net.Conn) string {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return ""
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return ViaSocket
	}
	var cred *syscall.Ucred
	if err := raw.Control(func(fd uintptr) {
		cred, _ = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cred == nil {
		return ViaSocket
	}
	if int(cred.Pid) == os.Getpid() {
		return ""
	}
	self, err := os.Executable()
	if err != nil {
		return ViaSocket
	}
	proc := filepath.Join("/proc", strconv.Itoa(int(cred.Pid)))
	peer, err := os.Readlink(filepath.Join(proc, "exe"))
	if err != nil || !sameFile(peer, self) {
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

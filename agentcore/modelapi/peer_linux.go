package modelapi

import (
	"fmt"
	"net"
	"os"
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

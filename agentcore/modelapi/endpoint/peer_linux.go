package endpoint

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// PeerCred is the uid and process id of the other end of a Unix socket connection
// (SO_PEERCRED); ok is false for another kind of connection or when the system does not say.
func PeerCred(conn net.Conn) (uid, pid int, ok bool) {
	uc, isUnix := conn.(*net.UnixConn)
	if !isUnix {
		return 0, 0, false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || cerr != nil || cred == nil {
		return 0, 0, false
	}
	return int(cred.Uid), int(cred.Pid), true
}

// CheckPeer refuses a Unix socket connection whose other end runs as another OS user, or whose
// user cannot be read. Other connections pass.
func CheckPeer(conn net.Conn) error {
	if _, isUnix := conn.(*net.UnixConn); !isUnix {
		return nil
	}
	uid, _, ok := PeerCred(conn)
	if !ok {
		return fmt.Errorf("the other end's user cannot be read (SO_PEERCRED)")
	}
	if uid != os.Getuid() {
		return fmt.Errorf("the other end runs as the user with uid %d, not as you (uid %d)", uid, os.Getuid())
	}
	return nil
}

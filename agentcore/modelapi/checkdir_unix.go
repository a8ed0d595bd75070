//go:build unix

package modelapi

import (
	"fmt"
	"os"
	"syscall"
)

// checkOwnDir refuses a socket directory that belongs to another user.
func checkOwnDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("modelapi: the socket directory %s: %w", dir, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("modelapi: the socket directory %s belongs to uid %d, not to this user; remove it or set XDG_RUNTIME_DIR", dir, st.Uid)
	}
	return nil
}

//go:build unix

package modelapi_test

import (
	"os/exec"
	"syscall"
)

// runAsNobody makes cmd run as the user nobody (uid and gid 65534); starting it needs root.
func runAsNobody(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

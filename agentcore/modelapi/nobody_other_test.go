//go:build !unix

package modelapi_test

import "os/exec"

// runAsNobody is Unix-only: running a process as another user there needs root, which the tests
// that call it check first (os.Getuid is -1 elsewhere, so they skip before calling it).
func runAsNobody(*exec.Cmd) { panic("running a process as another user is a Unix test") }

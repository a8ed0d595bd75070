package modelapi

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// viaOfPeer says how the process pid, which runs the program at exe, reached the endpoint:
// "" when it is this process (an in-process client such as the demo's example agent);
// [ViaRelay] when it runs the poppydesk-mcp program beside this executable; when it runs this
// same executable, its subcommand from args (viaOfArgs; args is read only then); else
// [ViaSocket]. peer_linux.go and peer_windows.go find pid, exe and args for a connection.
func viaOfPeer(pid int, exe string, args func() []string) string {
	if pid == os.Getpid() {
		return ""
	}
	self, err := os.Executable()
	if err != nil {
		return ViaSocket
	}
	relay := filepath.Join(filepath.Dir(self), "poppydesk-mcp")
	if runtime.GOOS == "windows" {
		relay += ".exe"
	}
	switch {
	case sameFile(exe, relay):
		return ViaRelay
	case !sameFile(exe, self):
		return ViaSocket
	}
	return viaOfArgs(args())
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

package modelapi

import (
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/windows"
)

// TestPeerProcessIsRead: the program and the command line peerVia reads of a client process are
// that process's own (here this test's process, opened as a client would be), so viaOfArgs sees
// the subcommand a Poppydesk client was started with.
func TestPeerProcessIsRead(t *testing.T) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	exe, err := imagePath(h)
	if err != nil {
		t.Fatalf("QueryFullProcessImageName: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !sameFile(exe, self) {
		t.Errorf("image path %q is not this program %q", exe, self)
	}
	pid := uint32(os.Getpid())
	reads := []struct {
		name string
		read func() (string, error)
	}{
		{"commandLine", func() (string, error) { return commandLine(h, pid) }},
		// The way Wine 8 takes, and that Windows takes only before 8.1; under Wine 8
		// commandLineInfo fails with STATUS_INVALID_INFO_CLASS and is not tested there.
		{"commandLineFromPEB", func() (string, error) { return commandLineFromPEB(pid) }},
	}
	for _, r := range reads {
		line, err := r.read()
		if err != nil {
			t.Errorf("%s: %v", r.name, err)
			continue
		}
		args, err := windows.DecomposeCommandLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(args, os.Args) {
			t.Errorf("%s: %q splits into %q, want this process's %q", r.name, line, args, os.Args)
		}
	}
}

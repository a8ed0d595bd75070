package crashtest

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestKillIsToldFromTheChildsOwnExit runs this test binary as a child that waits, kills it, and
// checks that Killed says so; a child that exits by itself with 1, as a failing test does, is
// not taken for a killed one.
func TestKillIsToldFromTheChildsOwnExit(t *testing.T) {
	switch os.Getenv("CRASHTEST_CHILD") {
	case "wait":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "fail":
		os.Exit(1)
	}
	child := func(mode string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillIsToldFromTheChildsOwnExit$")
		cmd.Env = append(os.Environ(), "CRASHTEST_CHILD="+mode)
		return cmd
	}
	cmd := child("wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := Kill(cmd.Process); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !Killed(cmd.ProcessState) {
		t.Fatalf("a killed child ended with %v; Killed says it was not killed", cmd.ProcessState)
	}
	cmd = child("fail")
	cmd.Run()
	if Killed(cmd.ProcessState) {
		t.Fatalf("a child that exited with 1 by itself (%v) reads as killed", cmd.ProcessState)
	}
}

package vault

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/internal/crashtest"
)

const crashChildEnv = "POPPYDESK_VAULT_CRASH_CHILD_DB"

// TestCrashChildProcess is the writer that TestCrashAtAnyPointLeavesAConsistentDatabase runs in
// a child process and kills. It does nothing in a normal test run.
func TestCrashChildProcess(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("only runs as the child of TestCrashAtAnyPointLeavesAConsistentDatabase")
	}
	ctx := context.Background()
	s, err := OpenState(ctx, path, StateOptions{ExchangeMaxBytes: 64 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		os.Exit(3)
	}
	body := []byte(strings.Repeat("x", 2048))
	for i := 0; ; i++ {
		id := fmt.Sprintf("%d-%d", os.Getpid(), i)
		now := time.Now()
		if err := s.CreateApproval(ctx, store.Approval{ID: id, Company: "https://shop.example", Interface: "api",
			Request: json.RawMessage(`{"n":` + fmt.Sprint(i) + `}`), State: "pending", Created: now},
			store.Revision{Revision: 1, Operation: json.RawMessage(`{"revision":1}`), Received: now}); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(4)
		}
		fmt.Fprintln(os.Stdout, "created", id) // the call returned: durable from here on
		if _, err := s.AddExchange(ctx, store.Exchange{At: now, Company: "https://shop.example", ResponseBody: body}); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(5)
		}
		if err := s.TransitionApproval(ctx, id, "pending", store.Decision{Revision: 1, To: "approved", Decision: "approve", At: now}); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(6)
		}
		fmt.Fprintln(os.Stdout, "approved", id)
		if err := s.SetSetting(ctx, "last", id); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(7)
		}
	}
}

// TestCrashAtAnyPointLeavesAConsistentDatabase kills a writer process (SIGKILL; TerminateProcess on
// Windows) at random moments,
// reopens the database, and checks SQLite's integrity, the foreign keys, that every write whose
// call had returned is there (write-before-send), and the invariants between tables.
func TestCrashAtAnyPointLeavesAConsistentDatabase(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		t.Skip("child process")
	}
	if testing.Short() {
		t.Skip("kills 20 child processes; skipped in -short")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("random seed %d", seed)
	created, approved := map[string]bool{}, map[string]bool{}

	for iter := range 20 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		first := make(chan struct{})
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			once := sync.OnceFunc(func() { close(first) })
			defer once()
			for sc.Scan() {
				verb, id, _ := strings.Cut(sc.Text(), " ")
				mu.Lock()
				switch verb {
				case "created":
					created[id] = true
				case "approved":
					approved[id] = true
				}
				mu.Unlock()
				once()
			}
		})
		select {
		case <-first:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("iteration %d: the child wrote nothing in 10 s; stderr: %s", iter, stderr.String())
		}
		time.Sleep(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		if err := crashtest.Kill(cmd.Process); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		werr := cmd.Wait()
		if !crashtest.Killed(cmd.ProcessState) {
			t.Fatalf("iteration %d: child ended by itself (%v), not by being killed; stderr: %s", iter, werr, stderr.String())
		}

		s, err := OpenState(ctx, path, StateOptions{ExchangeMaxBytes: 64 << 10})
		if err != nil {
			t.Fatalf("iteration %d: reopen after SIGKILL: %v", iter, err)
		}
		if err := s.Check(ctx); err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		checkCrashInvariants(ctx, t, s, created, approved)
		s.Close()
	}
	t.Logf("%d approvals created, %d approved across 20 killed writers", len(created), len(approved))
}

func checkCrashInvariants(ctx context.Context, t *testing.T, s *State, created, approved map[string]bool) {
	t.Helper()
	all, err := s.ListApprovals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]store.Approval{}
	for _, a := range all {
		byID[a.ID] = a
		if len(a.Revisions) != 1 {
			t.Fatalf("approval %s has %d revisions, want 1 (created in one transaction)", a.ID, len(a.Revisions))
		}
	}
	log, err := s.Decisions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	decisions := map[string]int{}
	for _, d := range log {
		decisions[d.ApprovalID]++
	}
	for id, a := range byID {
		want := map[string]int{"pending": 0, "approved": 1}[a.State]
		if decisions[id] != want {
			t.Fatalf("approval %s is %s with %d decisions, want %d (state and log change together)", id, a.State, decisions[id], want)
		}
	}
	for id := range created {
		if _, ok := byID[id]; !ok {
			t.Fatalf("approval %s was reported created (the call returned) but is missing after the crash", id)
		}
	}
	for id := range approved {
		if byID[id].State != "approved" {
			t.Fatalf("approval %s was reported approved but is %q after the crash", id, byID[id].State)
		}
	}
	if last, err := s.GetSetting(ctx, "last"); err == nil && byID[last].State != "approved" {
		t.Fatalf("setting last = %s, which is not an approved approval", last)
	}
	var size int64
	if err := s.r.QueryRowContext(ctx, "SELECT COALESCE(SUM(size), 0) FROM exchanges").Scan(&size); err != nil {
		t.Fatal(err)
	}
	if size > 64<<10 {
		t.Fatalf("exchange log holds %d bytes after reopen, over its 64 KiB window", size)
	}
}

package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/vault"
)

// heldState is the fixture's vault.State whose exchange writes wait until release is closed,
// as a slow disk would make them.
type heldState struct {
	*vault.State
	release chan struct{}
	entered atomic.Int64
}

func (h *heldState) AddExchanges(ctx context.Context, es []store.Exchange) ([]int64, error) {
	h.entered.Add(1)
	<-h.release
	return h.State.AddExchanges(ctx, es)
}

// storedTo counts the exchanges in the state database whose URL ends in path.
func storedTo(t testing.TB, st *vault.State, path string) int {
	t.Helper()
	exs, err := st.ListExchanges(context.Background(), vault.ExchangeQuery{NoBodies: true, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ex := range exs {
		if strings.HasSuffix(ex.URL, path) {
			n++
		}
	}
	return n
}

// TestExchangeLogLosesNothing: every exchange of a request is stored, however the run goes on:
// when the writer is held up (a slow disk) for longer than the queue holds, requests wait for
// room instead of their exchanges being dropped; and Close stores everything still queued.
func TestExchangeLogLosesNothing(t *testing.T) {
	ctx := context.Background()
	t.Run("writer held up past the queue's bound", func(t *testing.T) {
		var held *heldState
		f := newFixture(t, options{state: func(s *vault.State) store.EngineState {
			held = &heldState{State: s, release: make(chan struct{})}
			close(held.release) // discovery's exchanges go through
			return held
		}})
		c := discoverClient(t, f)
		if err := f.e.FlushExchanges(ctx); err != nil {
			t.Fatal(err)
		}
		held.release = make(chan struct{})
		total := engine.ExchangeQueue + engine.MaxBatch + 50
		var done atomic.Int64
		finished := make(chan error, 1)
		go func() {
			for range total {
				if _, err := get(t, f.s, c, "/api/products"); err != nil {
					finished <- err
					return
				}
				f.s.ResetRequests()
				done.Add(1)
			}
			finished <- nil
		}()
		// The writer holds one batch, the queue the next exchangeQueue; the request after them
		// waits for room.
		deadline := time.Now().Add(30 * time.Second)
		for done.Load() < int64(engine.ExchangeQueue) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		if n := done.Load(); n >= int64(total) || n > int64(engine.ExchangeQueue+engine.MaxBatch+1) {
			t.Fatalf("%d requests of %d finished while the exchange log could not be written: their exchanges must wait, not be dropped", n, total)
		}
		close(held.release)
		if err := <-finished; err != nil {
			t.Fatal(err)
		}
		if err := f.e.FlushExchanges(ctx); err != nil {
			t.Fatal(err)
		}
		if got := storedTo(t, f.state, "/api/products"); got != total {
			t.Fatalf("%d exchanges stored, want all %d requests", got, total)
		}
	})
	t.Run("close stores what is queued", func(t *testing.T) {
		f := newFixture(t, options{})
		c := discoverClient(t, f)
		const workers, each = 8, 40
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range each {
					if _, err := get(t, f.s, c, "/api/products"); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := f.e.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if got := storedTo(t, f.state, "/api/products"); got != workers*each {
			t.Fatalf("%d exchanges stored after Close, want all %d", got, workers*each)
		}
	})
}

func discoverClient(t *testing.T, f *fixture) *engine.Client {
	t.Helper()
	c, err := f.e.Discover(context.Background(), f.s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := f.e.Client(context.Background(), c.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

const crashChildEnv = "POPPYDESK_ENGINE_EXCHANGE_CRASH_CHILD"

// TestExchangeLogCrashChild is the engine that TestExchangeLogCrashLossBound runs in a child
// process and kills. It does nothing in a normal test run.
func TestExchangeLogCrashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) == "" {
		t.Skip("only runs as the child of TestExchangeLogCrashLossBound")
	}
	f := newFixture(t, options{})
	c := discoverClient(t, f)
	fmt.Println("state", f.statePath)
	for i := 1; ; i++ {
		if _, err := get(t, f.s, c, "/api/products"); err != nil {
			t.Fatal(err)
		}
		f.s.ResetRequests()
		fmt.Println("reported", i) // the response was read and closed: the exchange is reported
		time.Sleep(crashPace)
	}
}

// crashPace spaces the child's requests, so that what a crash may lose is told apart by time.
const crashPace = 10 * time.Millisecond

// TestExchangeLogCrashLossBound: a process killed while it sends requests loses only the
// exchanges the log had queued and not committed (docs/DESIGN.md "The exchange log"): at most
// exchangeQueue + maxBatch, and only those reported in the last batchWindow before the kill
// (plus the commit in progress, given a second here on a busy machine); every earlier one is in
// the state database.
func TestExchangeLogCrashLossBound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child process")
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestExchangeLogCrashChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1", "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const kill = 500
	var path string
	reported := 0
	at := map[int]time.Time{} // when each exchange was reported
	sc := bufio.NewScanner(out)
	for sc.Scan() && reported < kill {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "state "); ok {
			path = p
		}
		if n, ok := strings.CutPrefix(line, "reported "); ok {
			reported, _ = strconv.Atoi(n)
			at[reported] = time.Now()
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	cmd.Wait()
	if path == "" || reported < kill {
		t.Fatalf("the child stopped early (state %q, %d requests reported)", path, reported)
	}
	st, err := vault.OpenState(context.Background(), path, vault.StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := storedTo(t, st, "/api/products")
	lost := reported - stored
	t.Logf("killed after %d reported exchanges: %d stored, %d lost", reported, stored, lost)
	if lost > engine.ExchangeQueue+engine.MaxBatch {
		t.Fatalf("a crash lost %d of %d reported exchanges (%d stored); the bound is %d", lost, reported, stored, engine.ExchangeQueue+engine.MaxBatch)
	}
	// The log is written in order, so the lost ones are the last reported.
	if oldest := reported - lost + 1; lost > 0 && killed.Sub(at[oldest]) > engine.BatchWindow+time.Second {
		t.Fatalf("a crash lost an exchange reported %v before the kill (%d of %d lost); only those of the last %v plus one commit may be lost",
			killed.Sub(at[oldest]).Round(time.Millisecond), lost, reported, engine.BatchWindow)
	}
}

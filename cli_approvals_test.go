package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/vault"
)

// fileKV is a store.KV kept in one JSON file, written atomically (temp file + rename), so that
// several processes run one after the other over the same secrets. It exists ONLY for the kill
// test: the real keyring cannot be shared with a child process in every CI environment, and the
// child must sign with the same root key and User IDs. It lives in the test's temp dir and is
// deleted with it; the application itself keeps secrets only in the OS keyring.
type fileKV struct {
	path string
	mu   sync.Mutex
}

func (f *fileKV) load() (map[string][]byte, error) {
	m := map[string][]byte{}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	return m, json.Unmarshal(b, &m)
}

func (f *fileKV) save(m map[string][]byte) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", f.path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, f.path)
}

func (f *fileKV) Get(_ context.Context, name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.load()
	if err != nil {
		return nil, err
	}
	v, ok := m[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return v, nil
}

func (f *fileKV) Set(_ context.Context, name string, value []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.load()
	if err != nil {
		return err
	}
	m[name] = value
	return f.save(m)
}

func (f *fileKV) Delete(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.load()
	if err != nil {
		return err
	}
	if _, ok := m[name]; !ok {
		return fs.ErrNotExist
	}
	delete(m, name)
	return f.save(m)
}

func (f *fileKV) Names(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, err := f.load()
	if err != nil {
		return nil, err
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

func (f *fileKV) DeleteAll(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.save(map[string][]byte{})
}

// killEnv names the environment of the kill test's child process.
const (
	envKillChild = "POPPYDESK_APPROVALS_KILL_CHILD" // mode: "approve" or "finish"
	envState     = "POPPYDESK_KILL_STATE"
	envSecrets   = "POPPYDESK_KILL_SECRETS"
	envCA        = "POPPYDESK_KILL_CA"
	envClientID  = "POPPYDESK_KILL_CLIENT_ID"
	envCompany   = "POPPYDESK_KILL_COMPANY"
	envApproval  = "POPPYDESK_KILL_APPROVAL" // id revision digest
)

const (
	killAccount = "alice"
	killToken   = "tok-kill-test"
)

// killTransport is the dev-mode transport config of the reference Company for a process that
// only has its CA file.
func killTransport(t testing.TB, caPath string) transport.Config {
	t.Helper()
	b, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("the CA file holds no PEM block")
	}
	ca, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return transport.Config{DevHosts: append([]string(nil), poppytest.DevHosts...), DevRootCAs: []*x509.Certificate{ca}}
}

// killQueue opens the engine and the queue over the shared state file and secrets file.
func killQueue(t testing.TB, ctx context.Context, statePath, secretsPath, caPath, clientID string, sleepScale int, hooks ...any) (*engine.Engine, *approvals.Queue, func()) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	tc := killTransport(t, caPath)
	var onChange func(approvals.Event)
	for _, h := range hooks {
		switch h := h.(type) {
		case func(transport.Exchange):
			tc.Observer = h
		case func(approvals.Event):
			onChange = h
		}
	}
	e, st, closeAll, err := openEngine(ctx, statePath, engine.Config{Transport: tc,
		Identity: identity.Config{ClientID: clientID, ClientName: "approvals kill test"},
		Secrets:  store.NewSecrets(&fileKV{path: secretsPath}), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	q, err := openApprovals(approvals.Config{Engine: e, Logger: logger, OnChange: onChange, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Sleep: func(ctx context.Context, d time.Duration) error {
			// Retry-After and backoff, scaled down so 50+ runs fit in seconds.
			t := time.NewTimer(d / time.Duration(sleepScale))
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}, st)
	if err != nil {
		t.Fatal(err)
	}
	return e, q, func() { q.Close(); closeAll(context.Background()) }
}

// TestApprovalsKillChild is the child process of TestApprovalsKillEngineProcess (it is skipped
// otherwise): it opens the engine over the shared state and secrets, says "ready", runs Recover,
// then approves (mode "approve") or finishes the item (mode "finish": Recover, and Approve only
// if no approval was ever recorded, i.e. the previous child died before the decision was
// durable), and prints the outcome.
func TestApprovalsKillChild(t *testing.T) {
	mode := os.Getenv(envKillChild)
	if mode == "" {
		t.Skip("the child process of TestApprovalsKillEngineProcess")
	}
	ctx := context.Background()
	_, q, closeAll := killQueue(t, ctx, os.Getenv(envState), os.Getenv(envSecrets), os.Getenv(envCA), os.Getenv(envClientID), 100)
	defer closeAll()
	var id, rev, digest string
	fmt.Sscan(os.Getenv(envApproval), &id, &rev, &digest)
	fmt.Println("ready")
	if err := q.Recover(ctx); err != nil {
		t.Fatalf("recover: %v", err)
	}
	var o *approvals.Outcome
	var err error
	switch mode {
	case "approve":
		o, err = q.Approve(ctx, id, rev, digest)
	case "finish":
		it, gerr := q.Get(ctx, id)
		if gerr != nil {
			t.Fatal(gerr)
		}
		if it.State == "pending" && it.ApprovedRevision == "" {
			o, err = q.Approve(ctx, id, it.Current.Revision, it.Current.Digest)
		} else {
			o, err = q.Wait(ctx, id, time.Millisecond)
		}
	}
	if err != nil {
		t.Fatalf("%s: %v", mode, err)
	}
	b, _ := json.Marshal(o)
	fmt.Printf("RESULT %s\n", b)
}

// TestApprovalsKillEngineProcess is issue 6's Done-when: the ENGINE PROCESS is SIGKILLed at
// random points of the send path (after it is ready: during Recover, the write-before-send, the
// HTTP exchange, polling of 503 in progress, a lost response and its retry) at least 50 times.
// One reference Company runs in this process, so its ledger survives every kill; each child
// process is this test binary re-executed, over the SAME SQLite state file and secrets file.
// After each kill a new child runs Recover to completion. At the end the ledger has each approved
// operation performed exactly once, the decision log has exactly one approval per operation (the
// user was never asked twice), and the model's repeated request during an unknown outcome was
// held, not turned into a new approval.
func TestApprovalsKillEngineProcess(t *testing.T) {
	if os.Getenv(envKillChild) != "" {
		t.Skip("in the child")
	}
	const wantKills, maxOps = 50, 200 // about half the kills land before the child finishes
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	statePath, secretsPath := filepath.Join(dir, "state.db"), filepath.Join(dir, "secrets.json")
	s, err := poppytest.New(poppytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	caPath, err := s.WriteCAFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	clientID := s.URL(poppytest.AgentHost, "/agent.json")

	// The parent is the window and the model: it asks (CallAPI) and shows the item; the
	// children approve and send.
	e, q, closeAll := killQueue(t, ctx, statePath, secretsPath, caPath, clientID, 100)
	defer closeAll()
	s.AddHost(poppytest.AgentHost, e.Agent().Handler(nil))
	comp, err := e.Discover(ctx, s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	s.AddAccessToken(killToken, clientID, "orders:read", "orders:write")
	secrets := store.NewSecrets(&fileKV{path: secretsPath})
	if _, err := secrets.UpdateCompany(ctx, comp.Identifier, killAccount, func(b *store.CompanyBundle) error {
		b.Tokens = []store.Token{{AccessToken: killToken, TokenType: "Bearer"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var openapiURL string
	for _, a := range comp.Document.APIs {
		if a.Type == "openapi" {
			openapiURL = a.URL
		}
	}
	env := append(os.Environ(), envState+"="+statePath, envSecrets+"="+secretsPath, envCA+"="+caPath,
		envClientID+"="+clientID, envCompany+"="+comp.Identifier)
	rng := rand.New(rand.NewPCG(6, uint64(time.Now().UnixNano())))

	type run struct {
		killed bool
		out    string
	}
	child := func(mode, approval string, killAfter time.Duration) run {
		cmd := exec.Command(os.Args[0], "-test.run=^TestApprovalsKillChild$", "-test.count=1", "-test.v")
		cmd.Env = append(append([]string(nil), env...), envKillChild+"="+mode, envApproval+"="+approval)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		ready := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			once := sync.Once{}
			for sc.Scan() {
				out.WriteString(sc.Text() + "\n")
				if sc.Text() == "ready" {
					once.Do(func() { close(ready) })
				}
			}
			once.Do(func() { close(ready) })
		}()
		<-ready
		if killAfter >= 0 {
			time.Sleep(killAfter)
			cmd.Process.Signal(syscall.SIGKILL)
		}
		<-done
		err = cmd.Wait()
		var ee *exec.ExitError
		killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled()
		if !killed && err != nil {
			t.Fatalf("child %s failed: %v\n%s", mode, err, out.String())
		}
		return run{killed: killed, out: out.String()}
	}

	faults := []string{poppytest.FaultLoseResponse, poppytest.FaultInProgress503, ""}
	s.SetInProgressTries(3)
	kills, ops := 0, 0
	killedIn := map[string]int{}
	var ids []string
	for ops < maxOps && kills < wantKills {
		order := fmt.Sprintf("ord_k%02d", ops)
		s.AddOrder("", order, "stormline-m")
		fault := faults[ops%len(faults)]
		for _, f := range faults[:2] {
			s.SetFault(f, f == fault)
		}
		body, _ := json.Marshal(map[string]string{"item_id": order + "_item0", "replacement_sku": "stormline-insulated-m"})
		call := approvals.APICall{Company: comp.Identifier, Account: killAccount, API: openapiURL, OperationID: "exchangeItem",
			Input: apis.Input{Path: map[string]string{"id": order}, Body: body}}
		o, err := q.CallAPI(ctx, call)
		if err != nil || o.Status != approvals.StatusWaitingForUser {
			t.Fatalf("op %d: %+v %v", ops, o, err)
		}
		id := o.ApprovalID
		ids = append(ids, id)
		it, err := q.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// The user approves in a child that is killed at a random point after it is ready.
		r := child("approve", fmt.Sprintf("%s %s %s", id, it.Current.Revision, it.Current.Digest), time.Duration(rng.IntN(30_000))*time.Microsecond)
		after, err := q.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.killed {
			kills++
			killedIn[after.State]++
		}
		// The model asks again for the same action: held while the approval's outcome is
		// unknown; never a second item.
		sent := len(s.RequestsTo(poppytest.ShopHost, "/api/orders/"+order+"/exchanges"))
		o2, err := q.CallAPI(ctx, call)
		if err != nil {
			t.Fatalf("op %d: the model's second call: %v", ops, err)
		}
		switch after.State {
		case "approved", "sending", "retrying", "outcome_unknown":
			if o2.Status != approvals.StatusOutcomeUnknown || o2.ApprovalID != id ||
				len(s.RequestsTo(poppytest.ShopHost, "/api/orders/"+order+"/exchanges")) != sent {
				t.Fatalf("op %d (%s): the second call was not held: %+v", ops, after.State, o2)
			}
		default:
			if o2.ApprovalID != id && o2.Status == approvals.StatusWaitingForUser {
				t.Fatalf("op %d (%s): a second approval item %s for the same action", ops, after.State, o2.ApprovalID)
			}
		}
		// A new child recovers (and approves if the first died before the decision was durable).
		fin := child("finish", id+" - -", -1)
		if !strings.Contains(fin.out, `RESULT {"Status":"done"`) {
			t.Fatalf("op %d: the recovering child did not finish the operation:\n%s", ops, fin.out)
		}
		ops++
	}
	if kills < wantKills {
		t.Fatalf("only %d kills landed in %d operations", kills, ops)
	}
	// The ledger: each approved operation performed exactly once.
	per := map[string]int{}
	for _, l := range s.Ledger() {
		per[l.OperationID]++
	}
	if len(per) != ops {
		t.Fatalf("%d operations performed, want %d", len(per), ops)
	}
	for opID, n := range per {
		if n != 1 {
			t.Fatalf("operation %s performed %d times", opID, n)
		}
	}
	// The decision log: exactly one approval per operation; one item per action.
	items, err := q.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != ops {
		t.Fatalf("%d items for %d actions", len(items), ops)
	}
	resends := 0
	for _, id := range ids {
		it, err := q.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if it.State != "succeeded" || per[it.Current.OperationID] != 1 {
			t.Fatalf("item %s is %s", id, it.State)
		}
	}
	st, err := approvalsStoreOf(ctx, t, statePath)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := st.Decisions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	approves := map[string]int{}
	for _, d := range ds {
		switch d.Decision {
		case "approve":
			approves[d.ApprovalID]++
		case "resend":
			resends++
		}
	}
	for _, id := range ids {
		if approves[id] != 1 {
			t.Fatalf("approval %s has %d approve decisions", id, approves[id])
		}
	}
	t.Logf("%d kills in %d operations; state at the kill: %v; %d resends of the same approval", kills, ops, killedIn, resends)
}

// approvalsStoreOf opens a second handle on the state file (as a separate process would).
func approvalsStoreOf(ctx context.Context, t *testing.T, path string) (store.Approvals, error) {
	st, err := vault.OpenState(ctx, path, vault.StateOptions{})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { st.Close() })
	return st, nil
}

// TestApprovalsTimingsVault logs (t.Logf; no assertion on time) the two latencies of issue 6 on
// loopback with the real SQLite state (synchronous=FULL): from the Company's approval_required
// answer read to the pending item stored and OnChange emitted, and from Approve to the
// Company's response handled (the decision and each state written before and after the send).
func TestApprovalsTimingsVault(t *testing.T) {
	if os.Getenv(envKillChild) != "" {
		t.Skip("in the child")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	s, err := poppytest.New(poppytest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	caPath, err := s.WriteCAFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	clientID := s.URL(poppytest.AgentHost, "/agent.json")
	var mu sync.Mutex
	var respAt time.Time
	var toStored []time.Duration
	observe := func(ex transport.Exchange) {
		if ex.Status == 403 {
			mu.Lock()
			respAt = time.Now()
			mu.Unlock()
		}
	}
	changed := func(ev approvals.Event) {
		if ev.Kind == approvals.EventCreated {
			mu.Lock()
			toStored = append(toStored, time.Since(respAt))
			mu.Unlock()
		}
	}
	secretsPath := filepath.Join(dir, "secrets.json")
	e, q, closeAll := killQueue(t, ctx, filepath.Join(dir, "state.db"), secretsPath, caPath, clientID, 1, observe, changed)
	defer closeAll()
	s.AddHost(poppytest.AgentHost, e.Agent().Handler(nil))
	comp, err := e.Discover(ctx, s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	s.AddAccessToken(killToken, clientID, "orders:read", "orders:write")
	if _, err := store.NewSecrets(&fileKV{path: secretsPath}).UpdateCompany(ctx, comp.Identifier, killAccount, func(b *store.CompanyBundle) error {
		b.Tokens = []store.Token{{AccessToken: killToken, TokenType: "Bearer"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var api string
	for _, a := range comp.Document.APIs {
		if a.Type == "openapi" {
			api = a.URL
		}
	}
	var toResponse []time.Duration
	for i := range 30 {
		order := fmt.Sprintf("ord_t%02d", i)
		s.AddOrder("", order, "stormline-m")
		body, _ := json.Marshal(map[string]string{"item_id": order + "_item0", "replacement_sku": "stormline-insulated-m"})
		o, err := q.CallAPI(ctx, approvals.APICall{Company: comp.Identifier, Account: killAccount, API: api, OperationID: "exchangeItem",
			Input: apis.Input{Path: map[string]string{"id": order}, Body: body}})
		if err != nil || o.Status != approvals.StatusWaitingForUser {
			t.Fatalf("%+v %v", o, err)
		}
		it, err := q.Get(ctx, o.ApprovalID)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r, err := q.Approve(ctx, it.ID, it.Current.Revision, it.Current.Digest)
		toResponse = append(toResponse, time.Since(start))
		if err != nil || r.Status != approvals.StatusDone {
			t.Fatalf("%+v %v", r, err)
		}
	}
	med := func(d []time.Duration) time.Duration {
		d = append([]time.Duration(nil), d...)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("SQLite state, loopback TLS, %d operations: approval_required read -> pending stored + OnChange: median %v (max %v); Approve -> Company's response handled: median %v (max %v)",
		len(toResponse), med(toStored), slices.Max(toStored), med(toResponse), slices.Max(toResponse))
}

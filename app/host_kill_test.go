package app_test

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
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

// The kill test's child process reads its setup from the environment.
const (
	envKillChild = "POPPYDESK_APPROVALS_KILL_CHILD" // mode: "approve" or "finish"
	envDir       = "POPPYDESK_KILL_DIR"
	envSecrets   = "POPPYDESK_KILL_SECRETS"
	envCA        = "POPPYDESK_KILL_CA"
	envClientID  = "POPPYDESK_KILL_CLIENT_ID"
	envApproval  = "POPPYDESK_KILL_APPROVAL" // id revision digest
)

const killAccount = "alice"

// scaledSleep waits d/scale: Retry-After and backoff shortened so 50+ runs fit in seconds.
func scaledSleep(scale int) func(ctx context.Context, d time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		t := time.NewTimer(d / time.Duration(scale))
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// killHostConfig is the Host of a process that only has the data folder, the secrets file and
// the reference Company's CA file: what `poppydesk` builds, in developer mode for the reference
// Company.
func killHostConfig(t testing.TB, dir, secretsPath, caPath, clientID string) app.Config {
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
	return app.Config{Version: "kill test", Paths: app.Paths{Data: dir, Config: dir, State: dir},
		Secrets: store.NewSecrets(&fileKV{path: secretsPath}), ClientID: clientID, Socket: app.NoSocket,
		Developer: app.Developer{Hosts: append([]string(nil), poppytest.DevHosts...), RootCAs: []*x509.Certificate{ca}},
		Getenv:    func(string) string { return "" }, Notifier: app.NotifierFunc(func(string, string) {}),
		Tuning: app.Tuning{Sleep: scaledSleep(100)}}
}

// TestApprovalsKillChild is the child process of TestApprovalsKillEngineProcess (it is skipped
// otherwise): it builds the Host over the shared data folder and secrets, whose start-up work
// recovers what an earlier child left, says "ready", then approves (mode "approve") or finishes
// the item (mode "finish": Approve only if no approval was ever recorded, i.e. the previous
// child died before the decision was durable), and prints the outcome.
func TestApprovalsKillChild(t *testing.T) {
	mode := os.Getenv(envKillChild)
	if mode == "" {
		t.Skip("the child process of TestApprovalsKillEngineProcess")
	}
	ctx := context.Background()
	fmt.Println("ready")
	h, err := app.New(ctx, killHostConfig(t, os.Getenv(envDir), os.Getenv(envSecrets), os.Getenv(envCA), os.Getenv(envClientID)))
	if err != nil {
		t.Fatal(err)
	}
	defer h.CloseWithin(app.ShutdownGrace)
	if err := h.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	q := h.Queue()
	var id, rev, digest string
	fmt.Sscan(os.Getenv(envApproval), &id, &rev, &digest)
	var o *approvals.Outcome
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

// TestApprovalsKillEngineProcess: the ENGINE PROCESS is SIGKILLed at random points of the send
// path (while the Host starts and recovers, the write-before-send, the HTTP exchange, polling of
// 503 in progress, a lost response and its retry) at least 50 times. One reference Company runs
// in this process, so its ledger survives every kill; each child process is this test binary
// re-executed, building the Host over the SAME data folder and secrets. After each kill a new
// child runs to completion. At the end the ledger has each approved operation performed exactly
// once, the decision log has exactly one approval per operation (the user was never asked
// twice), and the model's repeated request during an unknown outcome was held, not turned into
// a new approval.
func TestApprovalsKillEngineProcess(t *testing.T) {
	if os.Getenv(envKillChild) != "" {
		t.Skip("in the child")
	}
	const wantKills, maxOps = 50, 200 // about half the kills land before the child finishes
	ctx := context.Background()
	dir := t.TempDir()
	secretsPath := filepath.Join(t.TempDir(), "secrets.json")
	// The parent is the window and the model: it signs in, asks (CallAPI) and shows the item;
	// the children approve and send.
	f := apptest.Start(t, apptest.Options{Dir: dir, Secrets: store.NewSecrets(&fileKV{path: secretsPath}),
		Edit: func(c *app.Config) {
			c.Paths = app.Paths{Data: dir, Config: dir, State: dir}
			c.Tuning.Sleep = scaledSleep(100)
		}})
	s := f.Company
	caPath, err := s.WriteCAFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.SignIn(t, killAccount, "orders:read", "orders:write")
	comp := f.Discover(t)
	q := f.Host.Queue()
	var openapiURL string
	for _, a := range comp.Document.APIs {
		if a.Type == "openapi" {
			openapiURL = a.URL
		}
	}
	env := append(os.Environ(), envDir+"="+dir, envSecrets+"="+secretsPath, envCA+"="+caPath, envClientID+"="+f.Host.ClientID())
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
		for _, fl := range faults[:2] {
			s.SetFault(fl, fl == fault)
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
		r := child("approve", fmt.Sprintf("%s %s %s", id, it.Current.Revision, it.Current.Digest), time.Duration(rng.IntN(60_000))*time.Microsecond)
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
	for _, id := range ids {
		it, err := q.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if it.State != "succeeded" || per[it.Current.OperationID] != 1 {
			t.Fatalf("item %s is %s", id, it.State)
		}
	}
	ds, err := f.Host.State().Decisions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	approves, resends := map[string]int{}, 0
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

// TestApprovalsTimingsVault logs (t.Logf; no assertion on time) two latencies on loopback with
// the real SQLite state (synchronous=FULL): from the Company's approval_required answer read to
// the pending item stored and the window told, and from Approve to the Company's response
// handled (the decision and each state written before and after the send).
func TestApprovalsTimingsVault(t *testing.T) {
	if os.Getenv(envKillChild) != "" {
		t.Skip("in the child")
	}
	ctx := context.Background()
	var mu sync.Mutex
	var respAt time.Time
	var toStored []time.Duration
	f := apptest.Start(t, apptest.Options{Edit: func(c *app.Config) {
		c.Tuning.Observer = func(ex transport.Exchange) {
			if ex.Status == 403 {
				mu.Lock()
				respAt = time.Now()
				mu.Unlock()
			}
		}
	}})
	f.Host.Relay().Attach(app.EmitterFunc(func(name string, data ...any) {
		if name != app.EventApprovalsChanged || len(data) == 0 {
			return
		}
		if c, ok := data[0].(app.ApprovalChange); ok && c.Kind == approvals.EventCreated {
			mu.Lock()
			toStored = append(toStored, time.Since(respAt))
			mu.Unlock()
		}
	}))
	f.SignIn(t, killAccount, "orders:read", "orders:write")
	comp := f.Discover(t)
	q := f.Host.Queue()
	var api string
	for _, a := range comp.Document.APIs {
		if a.Type == "openapi" {
			api = a.URL
		}
	}
	var toResponse []time.Duration
	for i := range 30 {
		order := fmt.Sprintf("ord_t%02d", i)
		f.Company.AddOrder("", order, "stormline-m")
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
	t.Logf("SQLite state, loopback TLS, %d operations: approval_required read -> pending stored + window told: median %v (max %v); Approve -> Company's response handled: median %v (max %v)",
		len(toResponse), med(toStored), slices.Max(toStored), med(toResponse), slices.Max(toResponse))
}

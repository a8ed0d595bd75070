package app_test

import (
	"bufio"
	"bytes"
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
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/internal/crashtest"
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
		Developer: app.Developer{Hosts: append([]string(nil), refcompany.DevHosts...), RootCAs: []*x509.Certificate{ca}},
		Getenv:    func(string) string { return "" }, Notifier: app.NotifierFunc(func(string, string) {}),
		Tuning: app.Tuning{Sleep: scaledSleep(100)}}
}

// TestApprovalsKillChild is the child process of TestApprovalsKillEngineProcess (it is skipped
// otherwise): it builds the Host over the shared data folder and secrets, whose start-up work
// recovers what an earlier child left, then approves (mode "approve") or finishes the item (mode
// "finish": Approve only if no approval was ever recorded, i.e. every earlier child died before
// the decision was durable), and prints the outcome. It reports its phases on stdout ("PHASE
// ...") so that the parent can aim its kills; where a kill landed is judged by the parent from
// the decision log and from what reached the Company, not from these lines.
func TestApprovalsKillChild(t *testing.T) {
	mode := os.Getenv(envKillChild)
	if mode == "" {
		t.Skip("the child process of TestApprovalsKillEngineProcess")
	}
	ctx := context.Background()
	phase := func(format string, a ...any) { fmt.Printf("PHASE "+format+"\n", a...) }
	fmt.Println("ready")
	cfg := killHostConfig(t, os.Getenv(envDir), os.Getenv(envSecrets), os.Getenv(envCA), os.Getenv(envClientID))
	sleep := cfg.Tuning.Sleep
	cfg.Tuning.Sleep = func(ctx context.Context, d time.Duration) error { phase("sleep"); return sleep(ctx, d) }
	cfg.Tuning.Observer = func(ex transport.Exchange) {
		if ex.RequestHeader.Get("Poppy-Approval") != "" || bytes.Contains(ex.RequestBody, []byte(refcompany.ApprovalMetaKey)) {
			phase("approval-response %d", ex.Status)
		}
	}
	h, err := app.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.CloseWithin(app.ShutdownGrace)
	phase("host")
	h.Relay().Attach(app.EmitterFunc(func(name string, data ...any) {
		if c, ok := firstOf[app.ApprovalChange](data); ok && name == app.EventApprovalsChanged {
			phase("state %s", c.State)
		}
	}))
	if err := h.WaitStarted(ctx); err != nil {
		t.Fatal(err)
	}
	phase("started")
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

func firstOf[T any](data []any) (T, bool) {
	var zero T
	if len(data) == 0 {
		return zero, false
	}
	v, ok := data[0].(T)
	return v, ok
}

// Decision names of the decision log (agentcore/approvals) that the kill test reads.
const (
	decApprove, decSend, decResend                = "approve", "send", "resend"
	decSucceeded, decFailed, decNewRevision       = "succeeded", "failed", "new_revision"
	decNoAnswer, decInProgress                    = "no_answer", "in_progress"
	interruptedNote                               = "was interrupted"
	whereNotDurable, whereAtCompany, whereNoFirst = "before the approval was durable", "request at the Company, response not recorded", "before its first record (start-up)"
)

var approvalOpID = regexp.MustCompile(`operation_id="([^"]*)"`)

// approvalsOnWire counts, per operation_id, the requests the Company received that carry an
// approval: the Poppy-Approval header (Operations 6) or the MCP _meta approval key. It reads the
// raw requests, not the Company's own bookkeeping.
func approvalsOnWire(s *refcompany.Server) map[string]int {
	out := map[string]int{}
	for _, r := range s.Requests() {
		for _, v := range r.Header.Values("Poppy-Approval") {
			if m := approvalOpID.FindStringSubmatch(v); m != nil {
				out[m[1]]++
			}
		}
		var msg struct {
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if r.Method == "POST" && json.Unmarshal(r.Body, &msg) == nil {
			if raw, ok := msg.Params.Meta[refcompany.ApprovalMetaKey]; ok {
				var a struct {
					OperationID string `json:"operation_id"`
				}
				json.Unmarshal(raw, &a)
				out[a.OperationID]++
			}
		}
	}
	return out
}

// TestApprovalsKillEngineProcess: the ENGINE PROCESS is SIGKILLed at random points of the send
// path at least 50 times, and so is the process that recovers after it, at random points of its
// resend. One reference Company runs in this process, so what it received survives every kill;
// each child process is this test binary re-executed, building the Host over the SAME data
// folder and secrets. Kills are aimed three ways (a random time after start, a phase the child
// reports, the moment the Company has decided an approved request and not yet answered) and
// judged by where they landed, from the decision log and the Company's records; the test logs
// that distribution.
//
// What reached the wire is counted against the decision log, whatever the Company's own
// deduplication: every request carrying the approval (Poppy-Approval or the MCP _meta key) must
// have its own durable send record written before it left (docs/DESIGN.md invariant 3), each
// attempt sends at most one request, and nothing reaches the Company before the approval is
// durable. Half the operations run with the Company's replay switched off (SetNoReplay), so
// that every performing request is performed again: there each operation is performed exactly
// once, plus once for every performing request whose response the engine never recorded (a
// response the Company dropped, or a kill after the request was performed and before its
// outcome was written) — the only case where Operations 7 sends the same approval again. With
// replay on, the ledger has each operation exactly once. The decision log has exactly one
// approval per operation (the user was never asked twice), and the model's repeated request
// while the outcome is unknown is held, not turned into a new approval.
func TestApprovalsKillEngineProcess(t *testing.T) {
	if os.Getenv(envKillChild) != "" {
		t.Skip("in the child")
	}
	const wantKills, minOps, maxOps, maxRecoveryKills = 50, 24, 200, 3
	ctx := context.Background()
	dir := t.TempDir()
	secretsPath := filepath.Join(t.TempDir(), "secrets.json")
	// The parent is the window and the model: it signs in, asks (CallAPI, CallTool) and shows
	// the item; the children approve and send.
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
	st := f.Host.State()
	var openapiURL, mcpURL string
	for _, a := range comp.Document.APIs {
		switch a.Type {
		case "openapi":
			openapiURL = a.URL
		case "mcp":
			mcpURL = a.URL
		}
	}
	env := append(os.Environ(), envDir+"="+dir, envSecrets+"="+secretsPath, envCA+"="+caPath, envClientID+"="+f.Host.ClientID())
	rng := rand.New(rand.NewPCG(6, uint64(time.Now().UnixNano())))

	// aim is where the parent tries to kill a child; where it landed is judged afterwards.
	type aim struct {
		kind  string        // "none", "time", "phase", "company"
		after time.Duration // "time": after ready; "phase": after the phase line
		phase string        // "phase": the PHASE line's prefix
		nth   int           // "company": the nth approved request of the operation in this child
	}
	phases := []string{"host", "started", "state approved", "state sending", "approval-response", "sleep"}
	randomAim := func() aim {
		switch rng.IntN(3) {
		case 0:
			return aim{kind: "time", after: time.Duration(rng.IntN(150_000)) * time.Microsecond}
		case 1:
			return aim{kind: "phase", phase: phases[rng.IntN(len(phases))], after: time.Duration(rng.IntN(3000)) * time.Microsecond}
		default:
			return aim{kind: "company", nth: 1 + rng.IntN(2)}
		}
	}
	type run struct {
		killed bool
		out    string
	}
	child := func(mode, approval, opID string, a aim) run {
		cmd := exec.Command(os.Args[0], "-test.run=^TestApprovalsKillChild$", "-test.count=1", "-test.v")
		cmd.Env = append(append([]string(nil), env...), envKillChild+"="+mode, envApproval+"="+approval)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = cmd.Stdout
		var killOnce sync.Once
		kill := func() { killOnce.Do(func() { crashtest.Kill(cmd.Process) }) }
		if a.kind == "company" {
			n := 0
			s.OnApproval(func(r refcompany.ApprovalReceived) {
				if r.OperationID == opID {
					if n++; n == a.nth {
						kill() // the Company decided (and maybe performed); the response is not written yet
					}
				}
			})
			defer s.OnApproval(nil)
		}
		mark := s.ConnMark()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			aimed := false
			for sc.Scan() {
				line := sc.Text()
				out.WriteString(line + "\n")
				switch {
				case aimed:
				case a.kind == "time" && line == "ready", a.kind == "phase" && strings.HasPrefix(line, "PHASE "+a.phase):
					aimed = true
					time.AfterFunc(a.after, kill)
				}
			}
		}()
		<-done
		err = cmd.Wait()
		killed := crashtest.Killed(cmd.ProcessState)
		if !killed && err != nil {
			t.Fatalf("child %s failed: %v\n%s", mode, err, out.String())
		}
		// Everything the child sent before it died is read and decided by the Company.
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := s.WaitConnsClosed(wctx, mark); err != nil {
			t.Fatal(err)
		}
		return run{killed: killed, out: out.String()}
	}

	// What the log and the Company held before a child ran.
	type snap struct{ decs, recv, wire int }
	take := func(id, opID string) snap {
		ds, err := st.Decisions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return snap{decs: len(ds), recv: len(s.ApprovalsReceived()), wire: approvalsOnWire(s)[opID]}
	}
	kills := 0
	where := map[string]int{}     // role: where the kill landed → kills
	byAim := map[string]int{}     // aim kind → kills
	extraPerf := map[string]int{} // operation → performed requests whose response a kill cut off
	// settle checks what one child put on the wire against what it recorded, and classifies its kill.
	settle := func(opN int, role, id, opID string, before snap, r run, a aim) {
		t.Helper()
		ds, err := st.Decisions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		delta := ds[before.decs:]
		var recv []refcompany.ApprovalReceived
		for _, x := range s.ApprovalsReceived()[before.recv:] {
			if x.OperationID == opID {
				recv = append(recv, x)
			}
		}
		w := approvalsOnWire(s)[opID]
		dw := w - before.wire
		if dw != len(recv) {
			t.Fatalf("op %d (%s process): %d requests on the wire carried the approval, the Company decided %d", opN, role, dw, len(recv))
		}
		approved, sends := false, 0
		for _, d := range ds {
			switch d.Decision {
			case decApprove:
				approved = true
			case decSend, decResend:
				sends++
			}
		}
		if !approved && w != 0 {
			t.Fatalf("op %d (%s process): %d requests carrying the approval reached the Company before the approval was durable (docs/DESIGN.md invariant 3)\n%s", opN, role, w, r.out)
		}
		if sends == 0 && w != 0 {
			t.Fatalf("op %d (%s process): %d requests carrying the approval reached the Company before any send was recorded (write before send, docs/DESIGN.md invariant 3)\n%s", opN, role, w, r.out)
		}
		answered, noAnswer, open := 0, 0, 0
		for i, d := range delta {
			if d.Decision != decSend && d.Decision != decResend {
				continue
			}
			if i+1 == len(delta) {
				open++
				continue
			}
			switch delta[i+1].Decision {
			case decSucceeded, decFailed, decNewRevision, decInProgress:
				answered++
			case decNoAnswer:
				noAnswer++
			default:
				t.Fatalf("op %d (%s process): after %s the log has %s", opN, role, d.Decision, delta[i+1].Decision)
			}
		}
		lost := 0
		for _, x := range recv {
			if x.Lost {
				lost++
			}
		}
		if open > 0 && !r.killed {
			t.Fatalf("op %d (%s process): the process ended with a send whose outcome it never recorded", opN, role)
		}
		// Each attempt (its own durable send record) sends the approval once: those the Company
		// answered did reach it; those without a usable answer, or cut off by the kill, may have.
		if lo, hi := answered+min(lost, noAnswer), answered+noAnswer+open; dw < lo || dw > hi {
			t.Fatalf("op %d (%s process): %d requests carried the approval, but this process recorded %d attempts answered by the Company, %d without a usable answer (%d responses dropped by the Company) and %d cut off by the kill: the approval was sent twice in one attempt or without its own send record\n%s",
				opN, role, dw, answered, noAnswer, lost, open, r.out)
		}
		if !r.killed {
			return
		}
		kills++
		byAim[a.kind]++
		last := ""
		if len(delta) > 0 {
			last = delta[len(delta)-1].Decision
		}
		class := "after the outcome was recorded"
		switch {
		case len(delta) == 0 && role == "first":
			class = whereNotDurable
		case len(delta) == 0:
			class = whereNoFirst
		case last == decApprove:
			class = "approval durable, send record not yet written"
		case last == decNoAnswer && strings.Contains(delta[len(delta)-1].Note, interruptedNote):
			class = "interrupted send marked, resend record not yet written"
		case last == decSend || last == decResend:
			// The attempts before the last each sent one request, except that one without a
			// usable answer may have sent none: exact unless such an attempt is not accounted
			// for by a response the Company dropped.
			reached := dw - answered - noAnswer
			if reached != 1 && lost < noAnswer {
				t.Logf("op %d: %d requests for %d answered and %d unanswered attempts: whether the last one reached the Company is not known", opN, dw, answered, noAnswer)
				class = "send record durable, unknown whether the request reached the Company"
				break
			}
			class = "send record durable, request not at the Company"
			if reached == 1 {
				class = whereAtCompany
				if x := recv[len(recv)-1]; x.Result == refcompany.ReceivedPerformed && !x.Lost {
					extraPerf[opID]++
				}
			}
		case last == decNoAnswer || last == decInProgress:
			class = "between attempts (backoff or Retry-After poll)"
		}
		where[role+": "+class]++
	}

	faults := []string{refcompany.FaultLoseResponse, refcompany.FaultInProgress503, ""}
	s.SetInProgressTries(3)
	ops := 0
	noReplay := map[string]bool{}
	var ids []string
	for ops < maxOps && (kills < wantKills || ops < minOps) {
		order := fmt.Sprintf("ord_k%02d", ops)
		s.AddOrder("", order, "stormline-m")
		fault := faults[ops%len(faults)]
		for _, fl := range faults[:2] {
			s.SetFault(fl, fl == fault)
		}
		mcpOp := ops%2 == 1
		nr := (ops/6)%2 == 0
		s.SetNoReplay(nr)
		body, _ := json.Marshal(map[string]string{"item_id": order + "_item0", "replacement_sku": "stormline-insulated-m"})
		args, _ := json.Marshal(map[string]string{"order_id": order, "item_id": order + "_item0", "replacement_sku": "stormline-insulated-m"})
		endpoint := "/api/orders/" + order + "/exchanges"
		ask := func() (*approvals.Outcome, error) {
			if mcpOp {
				return q.CallTool(ctx, approvals.ToolCall{Company: comp.Identifier, Account: killAccount, Server: mcpURL, Tool: "exchange_item", Arguments: args})
			}
			return q.CallAPI(ctx, approvals.APICall{Company: comp.Identifier, Account: killAccount, API: openapiURL, OperationID: "exchangeItem",
				Input: apis.Input{Path: map[string]string{"id": order}, Body: body}})
		}
		if mcpOp {
			endpoint = refcompany.MCPPath
		}
		o, err := ask()
		if err != nil || o.Status != approvals.StatusWaitingForUser {
			t.Fatalf("op %d: %+v %v", ops, o, err)
		}
		id := o.ApprovalID
		ids = append(ids, id)
		it, err := q.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		opID := it.Current.OperationID
		noReplay[opID] = nr
		// The user approves in a child that the parent tries to kill.
		a := randomAim()
		before := take(id, opID)
		r := child("approve", fmt.Sprintf("%s %s %s", id, it.Current.Revision, it.Current.Digest), opID, a)
		settle(ops, "first", id, opID, before, r, a)
		after, err := q.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// The model asks again for the same action: held while the approval's outcome is
		// unknown; never a second item.
		sent := len(s.RequestsTo(refcompany.ShopHost, endpoint))
		o2, err := ask()
		if err != nil {
			t.Fatalf("op %d: the model's second call: %v", ops, err)
		}
		switch after.State {
		case "approved", "sending", "retrying", "outcome_unknown":
			if o2.Status != approvals.StatusOutcomeUnknown || o2.ApprovalID != id || len(s.RequestsTo(refcompany.ShopHost, endpoint)) != sent {
				t.Fatalf("op %d (%s): the second call was not held: %+v", ops, after.State, o2)
			}
		default:
			if o2.ApprovalID != id && o2.Status == approvals.StatusWaitingForUser {
				t.Fatalf("op %d (%s): a second approval item %s for the same action", ops, after.State, o2.ApprovalID)
			}
		}
		// New children recover (and approve if every earlier one died before the decision was
		// durable); some are killed at random points of their resend, until one finishes.
		for k := 0; ; k++ {
			a := aim{kind: "none"}
			if k < maxRecoveryKills && rng.IntN(10) < 6 {
				a = randomAim()
			}
			before := take(id, opID)
			fin := child("finish", id+" - -", opID, a)
			settle(ops, "recovery", id, opID, before, fin, a)
			if fin.killed {
				continue
			}
			if !strings.Contains(fin.out, `RESULT {"Status":"done"`) {
				t.Fatalf("op %d: the recovering child did not finish the operation:\n%s", ops, fin.out)
			}
			break
		}
		ops++
	}
	if kills < wantKills {
		t.Fatalf("only %d kills landed in %d operations", kills, ops)
	}
	// The ledger: each approved operation performed once, plus once per performing request whose
	// response was never recorded (NoReplay); with replay, exactly once.
	per, lost := map[string]int{}, map[string]int{}
	for _, l := range s.Ledger() {
		per[l.OperationID]++
	}
	for _, x := range s.ApprovalsReceived() {
		if x.Lost {
			lost[x.OperationID]++
		}
	}
	if len(per) != ops {
		t.Fatalf("%d operations performed, want %d", len(per), ops)
	}
	extraTotal := 0
	for opID, n := range per {
		want := 1
		if noReplay[opID] {
			want += lost[opID] + extraPerf[opID]
			extraTotal += n - 1
		}
		if n != want {
			t.Fatalf("operation %s (no replay %v) performed %d times, want %d (%d responses dropped by the Company, %d performing requests cut off by a kill before the outcome was recorded)",
				opID, noReplay[opID], n, want, lost[opID], extraPerf[opID])
		}
	}
	// The decision log: exactly one approval and one success per operation; one item per action.
	items, err := q.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != ops {
		t.Fatalf("%d items for %d actions", len(items), ops)
	}
	approves, succeeded, resends := map[string]int{}, map[string]int{}, 0
	ds, err := st.Decisions(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		switch d.Decision {
		case decApprove:
			approves[d.ApprovalID]++
		case decSucceeded:
			succeeded[d.ApprovalID]++
		case decResend:
			resends++
		}
	}
	for _, id := range ids {
		it, err := q.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if it.State != "succeeded" || per[it.Current.OperationID] == 0 || approves[id] != 1 || succeeded[id] != 1 {
			t.Fatalf("item %s is %s with %d approve and %d succeeded decisions", id, it.State, approves[id], succeeded[id])
		}
	}
	for _, l := range s.Ledger() {
		for _, it := range items {
			if it.Current.OperationID == l.OperationID && it.ApprovedRevision != l.Revision {
				t.Fatalf("operation %s performed with revision %s, the user approved %s", l.OperationID, l.Revision, it.ApprovedRevision)
			}
		}
	}
	keys := make([]string, 0, len(where))
	for k := range where {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var dist strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&dist, "\n  %3d  %s", where[k], k)
	}
	t.Logf("%d kills in %d operations (aimed: %v); %d resends of the same approval; %d extra performances with replay off, each matched to a dropped response or a kill before the outcome was recorded; where the kills landed:%s",
		kills, ops, byAim, resends, extraTotal, dist.String())
	for _, k := range []string{"first: " + whereNotDurable, "first: " + whereAtCompany, "recovery: " + whereAtCompany} {
		if where[k] == 0 {
			t.Fatalf("no kill landed %q", k)
		}
	}
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

package e2e

// The canary (docs/DESIGN.md invariant 5; spec 10.2): no secret leaves the keyring. Poppydesk is
// built as `poppydesk` builds it (apptest: app.New over the reference Company) with the REAL OS
// keyring, SQLite on disk and a debug-level JSON log in rotated files, and runs a scenario
// through the Host's parts and the window's services. Then every secret — planted markers, the
// tokens, codes and keys the run produced, and what the Company received — is looked for, in
// several encodings, in every place Poppydesk writes or gives away: each must hold none, and
// each holds a control value, so a place the scan does not really read fails the test.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/conformance"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/inspect"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/app/apptest"
	"github.com/poppydesk/poppydesk/app/fronts"
	"github.com/poppydesk/poppydesk/browser"
	"github.com/poppydesk/poppydesk/vault"
)

// canaryKeyring returns a real Secret Service keyring under a throwaway service name, deleted
// at the end. Without a reachable Secret Service the test skips, unless
// POPPYDESK_REQUIRE_KEYRING=1 (scripts/with-keyring.sh sets it), which makes it fail.
func canaryKeyring(t *testing.T) *vault.Keyring {
	t.Helper()
	unavailable := func(why string) {
		msg := why + "; run `bash scripts/with-keyring.sh go test -run Canary -v ./e2e/`"
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
			t.Fatal("POPPYDESK_REQUIRE_KEYRING=1 but " + msg)
		}
		t.Skip(msg)
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		unavailable("there is no D-Bus session, so no Secret Service")
	}
	kr := vault.NewKeyring(vault.KeyringOptions{Service: "poppydesk-canary-" + randHex(6)})
	if _, err := kr.Get(context.Background(), "probe"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		unavailable(fmt.Sprintf("no reachable Secret Service (%v)", err))
	}
	t.Cleanup(func() {
		if err := kr.DeleteAll(context.Background()); err != nil {
			t.Errorf("deleting the canary keyring items: %v", err)
		}
	})
	return kr
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// secret is a value that must be found nowhere.
type secret struct{ what, value string }

// needle is one form of a secret the scan looks for.
type needle struct{ what, form, value string }

// prefixLen is the length of the prefix of a secret that is looked for on its own: a leak of
// part of a value is a leak.
const prefixLen = 16

// forms returns the ways a secret could be written: as it is, in base64 (standard and URL
// alphabets, padded and raw, also inside longer encoded data), in hex, URL-escaped (query and
// path), JSON-escaped, decoded (a base64url or hex value stored as its bytes), and its first and
// last prefixLen characters. A JWT's first characters are its header, the same in every JWT, so
// for a JWT the prefix is taken from its signature. Forms equal to one already listed are left
// out.
func forms(s secret) []needle {
	v := s.value
	jsonEsc := func(html bool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(v)
		return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`)
	}
	prefix := v
	if parts := strings.Split(v, "."); len(parts) == 3 && strings.HasPrefix(v, "eyJ") {
		prefix = parts[2]
	}
	if len(prefix) > prefixLen {
		prefix = prefix[:prefixLen]
	}
	all := []needle{
		{s.what, "as is", v},
		{s.what, "base64", base64.StdEncoding.EncodeToString([]byte(v))},
		{s.what, "base64 raw", base64.RawStdEncoding.EncodeToString([]byte(v))},
		{s.what, "base64url", base64.URLEncoding.EncodeToString([]byte(v))},
		{s.what, "base64url raw", base64.RawURLEncoding.EncodeToString([]byte(v))},
		{s.what, "hex", hex.EncodeToString([]byte(v))},
		{s.what, "HEX", strings.ToUpper(hex.EncodeToString([]byte(v)))},
		{s.what, "URL query escape", url.QueryEscape(v)},
		{s.what, "URL path escape", url.PathEscape(v)},
		{s.what, "JSON escape", jsonEsc(true)},
		{s.what, "JSON escape without HTML", jsonEsc(false)},
		{s.what, fmt.Sprintf("first %d characters", prefixLen), prefix},
	}
	if len(v) > prefixLen {
		all = append(all, needle{s.what, fmt.Sprintf("last %d characters", prefixLen), v[len(v)-prefixLen:]})
	}
	// Inside longer base64 data (a Basic credential, "Bearer " + token encoded whole), the
	// secret starts at any byte of a 3-byte group: its encoding without the characters that
	// also depend on the neighbouring bytes.
	for k := range 3 {
		for _, enc := range []struct {
			name string
			e    *base64.Encoding
		}{{"base64", base64.RawStdEncoding}, {"base64url", base64.RawURLEncoding}} {
			e := enc.e.EncodeToString([]byte(strings.Repeat("\x00", k) + v))
			from, to := (k*8+5)/6, (k+len(v))*8/6
			if to-from >= prefixLen {
				all = append(all, needle{s.what, fmt.Sprintf("%s inside longer data (offset %d)", enc.name, k), e[from:to]})
			}
		}
	}
	// A value that is itself encoded (a JWK's d, a hex canary) could be written as its bytes.
	for _, dec := range []func(string) ([]byte, error){base64.RawURLEncoding.DecodeString, base64.RawStdEncoding.DecodeString, hex.DecodeString} {
		if b, err := dec(v); err == nil && len(b) >= 12 {
			all = append(all, needle{s.what, "decoded", string(b)})
			break
		}
	}
	seen := map[string]bool{}
	var out []needle
	for _, n := range all {
		if !seen[n.value] {
			seen[n.value] = true
			out = append(out, n)
		}
	}
	return out
}

// TestCanaryForms: every way of writing a secret that the scan claims to cover is found by one of
// its needles, also when the secret is encoded inside longer data.
func TestCanaryForms(t *testing.T) {
	tok := "at_" + base64.RawURLEncoding.EncodeToString([]byte(randHex(24)))
	d := base64.RawURLEncoding.EncodeToString([]byte(randHex(16)))
	jsonOf := func(v string) string { b, _ := json.Marshal(map[string]string{"v": v}); return string(b) }
	for _, tc := range []struct{ name, secret, written string }{
		{"as is in a log line", tok, `{"msg":"x","token":"` + tok + `"}`},
		{"base64", tok, base64.StdEncoding.EncodeToString([]byte(tok))},
		{"base64url", tok, base64.RawURLEncoding.EncodeToString([]byte(tok))},
		{"a Basic credential (offset 1)", tok, "Basic " + base64.StdEncoding.EncodeToString([]byte("client:"+tok))},
		{"Bearer + token encoded (offset 1)", tok, base64.StdEncoding.EncodeToString([]byte("Bearer " + tok))},
		{"base64url after two bytes (offset 2)", tok, base64.RawURLEncoding.EncodeToString([]byte("ab" + tok + "tail"))},
		{"hex", tok, "0x" + hex.EncodeToString([]byte(tok))},
		{"HEX", tok, strings.ToUpper(hex.EncodeToString([]byte(tok)))},
		{"URL-escaped", "a/b+c=d&e" + tok, "https://x.example/?t=" + url.QueryEscape("a/b+c=d&e"+tok)},
		{"JSON-escaped", `<"` + tok + `">`, jsonOf(`<"` + tok + `">`)},
		{"prefix", tok, "token=" + tok[:prefixLen] + "…"},
		{"suffix", tok, "token=…" + tok[len(tok)-prefixLen:]},
		{"a JWT's signature prefix", "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0." + d, "sig " + d[:prefixLen]},
		{"decoded bytes of a JWK d", d, "\x00\x01" + func() string { b, _ := base64.RawURLEncoding.DecodeString(d); return string(b) }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range forms(secret{"test", tc.secret}) {
				if strings.Contains(tc.written, n.value) {
					return
				}
			}
			t.Fatalf("no needle of %q is found in %q", tc.secret, tc.written)
		})
	}
}

// place is something Poppydesk wrote or handed out, with the control values it must hold (so
// the scan is known to read it).
type place struct {
	name     string
	data     []byte
	controls []string
}

// sqliteHeader, walMagic and shmVersion are how SQLite's three files begin: the database's
// header string, the WAL header's magic number (big-endian; its low bit, left out here, names
// the checksum's byte order) and the wal-index's version 3007000 (in the machine's byte order,
// little-endian on amd64 and arm64).
var (
	sqliteHeader = []byte("SQLite format 3\x00")
	walMagic     = []byte{0x37, 0x7f, 0x06} // 0x377f0682 or 0x377f0683
	shmVersion   = []byte{0x18, 0xe2, 0x2d, 0x00}
)

func isWAL(b []byte) bool {
	return len(b) >= 32 && binary.BigEndian.Uint32(b)&^1 == 0x377f0682
}

func isSHM(b []byte) bool {
	return len(b) >= 136 && bytes.HasPrefix(b, shmVersion)
}

// TestCanaryNoSecretLeaves runs the scenario and then scans every place for every secret.
func TestCanaryNoSecretLeaves(t *testing.T) {
	kr := canaryKeyring(t)
	ctx := context.Background()
	dir := t.TempDir()

	// The debug-level JSON log, in files rotated small enough (4 KiB) that the run fills several.
	logPath := filepath.Join(dir, "logs", "poppydesk.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		t.Fatal(err)
	}
	const logKeep = 50
	rf, err := app.OpenRotatingFile(logPath, 4<<10, logKeep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rf.Close() })

	// The reference Company is started here so that the controlled browser can trust exactly its
	// key; the Host and the Company read one clock.
	clock := &refcompany.Clock{}
	s, err := refcompany.New(refcompany.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	chromium, browserErr := exec.LookPath("/usr/bin/chromium")

	var observerMu sync.Mutex
	var onResponse func(transport.Exchange)
	f := apptest.Start(t, apptest.Options{Company: s, Clock: clock, Dir: dir, Secrets: store.NewSecrets(kr), Edit: func(c *app.Config) {
		c.Logger = app.NewLogger(rf, slog.LevelDebug)
		c.Tuning.Observer = func(ex transport.Exchange) {
			observerMu.Lock()
			fn := onResponse
			observerMu.Unlock()
			if fn != nil {
				fn(ex)
			}
		}
		if browserErr == nil {
			c.Browser = browser.Options{ExecPath: chromium, TrustSPKI: []string{leafSPKI(t, s)}}
		}
	}})
	h := f.Host
	secrets, st, e := h.Secrets(), h.State(), h.Engine()
	statePath := filepath.Join(f.Config.Paths.Data, app.StateFile)

	// Plant the markers: the Agent ID in the Company's identity bundle, the tokens in the
	// account's bundle, and the access token at the Company.
	markerAT := "CANARY-AT-" + randHex(8)
	markerRT := "CANARY-RT-" + randHex(8)
	markerAID := "CANARY-AID-" + randHex(8)
	const account = "canary-account"
	identifier := s.Identifier()
	if _, err := secrets.UpdateCompany(ctx, identifier, "", func(b *store.CompanyBundle) error { b.AgentID = markerAID; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.UpdateCompany(ctx, identifier, account, func(b *store.CompanyBundle) error {
		b.Tokens = []store.Token{{AccessToken: markerAT, RefreshToken: markerRT, TokenType: "Bearer", Scopes: []string{"orders:read"}}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.AddAccessToken(markerAT, e.Agent().ClientID(), "orders:read")

	// Discovery, signed-out and signed-in requests.
	c := f.Discover(t)
	get := func(cl *engine.Client, path string) {
		t.Helper()
		resp, err := cl.Do(ctx, &transport.Request{Method: http.MethodGet, URL: s.URL(refcompany.ShopHost, path)})
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.SignedOut {
			t.Fatalf("GET %s: status %d, signed out %v", path, resp.StatusCode, resp.SignedOut)
		}
	}
	out, err := e.Client(ctx, c.Identifier, "")
	if err != nil {
		t.Fatal(err)
	}
	in, err := e.Client(ctx, c.Identifier, account)
	if err != nil {
		t.Fatal(err)
	}
	get(out, "/api/products")
	get(in, "/api/orders")
	// session_ended once: a new Session, the request sent again.
	var once sync.Once
	observerMu.Lock()
	onResponse = func(ex transport.Exchange) {
		if ex.Status == http.StatusBadRequest {
			once.Do(func() { s.SetFault(refcompany.FaultSessionEnded, false) })
		}
	}
	observerMu.Unlock()
	if err := s.SetFault(refcompany.FaultSessionEnded, true); err != nil {
		t.Fatal(err)
	}
	get(in, "/api/orders")
	// Past the rotation point (12 h delegations rotate 1 h before exp): new delegated keys.
	f.Clock.Advance(11*time.Hour + 30*time.Minute)
	get(out, "/api/products")
	get(in, "/api/orders")

	// Tokens the reference Company issues cannot carry a marker, so their ACTUAL values are
	// collected from the keyring bundle after every step (sign-in, refresh, conversation,
	// approval) and scanned for like the markers.
	var issued []string
	const signedIn = "canary-signed-in"
	collectTokens := func(step string) {
		t.Helper()
		b, err := secrets.LoadCompany(ctx, identifier, signedIn)
		if err != nil {
			t.Fatalf("reading the tokens after %s: %v", step, err)
		}
		if len(b.Tokens) == 0 {
			t.Fatalf("no tokens in the keyring after %s", step)
		}
		for _, tok := range b.Tokens {
			issued = append(issued, tok.AccessToken, tok.RefreshToken)
		}
	}
	// A REAL Direct Sign-In (spec 4.2) through the window's Sign-in service, the reference
	// Company playing the user's browser on its consent page.
	f.SignIn(t, signedIn, "orders:read", "orders:write")
	collectTokens("the sign-in")
	signed, err := e.Client(ctx, c.Identifier, signedIn)
	if err != nil {
		t.Fatal(err)
	}
	get(signed, "/api/orders")
	// A refresh (spec 4.4): the Company expires every access token; the next signed-in call gets
	// invalid_token, and the engine refreshes through its sign-in layer and retries.
	before := len(issued)
	s.ExpireAccessTokens()
	get(signed, "/api/orders")
	collectTokens("the refresh")
	if fresh := issued[before:]; fresh[0] == issued[0] || fresh[1] == issued[1] {
		t.Fatal("the access and refresh tokens did not change: no refresh happened")
	}

	// A conversation with the reference Company Agent (spec 8) through the Host's Manager, over
	// the same SQLite file: signed out first, the exchange needs the account, so the Company
	// Agent sends an authorization event (spec 8.11); after sign-in the same conversation
	// continues with the token. The operation in its message goes to the Host's approval queue
	// and is approved in the window's Approvals service (Operations 4, 6).
	m, approvalsFront := h.Conversations(), fronts.New(h).Approvals
	var convMu sync.Mutex
	var deltas, authNeeds int
	h.Relay().Attach(app.EmitterFunc(func(name string, data ...any) {
		if name != app.EventConversationsChanged || len(data) == 0 {
			return
		}
		ch, _ := data[0].(app.ConversationChange)
		convMu.Lock()
		defer convMu.Unlock()
		switch ch.Kind {
		case conversation.UpdateDelta:
			deltas++
		case conversation.UpdateAuthorization:
			authNeeds++
		}
	}))
	// What the model would receive of the conversation and the browser (modelapi hands it
	// Views, entries and the browser tools' results): scanned like the files.
	var modelSaw bytes.Buffer
	sawModel := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		modelSaw.Write(b)
	}
	convText := func(id, text string) func() bool {
		return func() bool {
			_, es, err := m.Get(ctx, c.Identifier, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, en := range es {
				if strings.Contains(en.Text, text) {
					return true
				}
			}
			return false
		}
	}
	waitConv := func(what string, read string, pred func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !pred() {
			if time.Now().After(deadline) {
				t.Fatalf("the conversation: %s never happened", what)
			}
			if read != "" {
				if _, err := m.Read(ctx, c.Identifier, read, 500*time.Millisecond); err != nil {
					t.Fatalf("reading the conversation while waiting for %s: %v", what, err)
				}
			} else {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	cv, err := m.Start(ctx, conversation.Start{Company: c.Identifier, Text: "Hi", Wait: 2 * time.Second})
	if err != nil {
		t.Fatalf("starting the conversation: %v", err)
	}
	convID := cv.ConversationID
	if _, err := m.Send(ctx, conversation.Send{Company: c.Identifier, ConversationID: convID, Text: "I want to exchange my jacket from my order", Wait: 5 * time.Second}); err != nil {
		t.Fatalf("sending the exchange request signed out: %v", err)
	}
	waitConv("the authorization need", convID, func() bool {
		convMu.Lock()
		defer convMu.Unlock()
		return authNeeds > 0
	})
	if _, err := m.SignedIn(ctx, c.Identifier, convID, signedIn); err != nil {
		t.Fatalf("continuing the conversation signed in: %v", err)
	}
	// A streamed reply (spec 8.6). The message is sent only once the Company holds the stream
	// open (it received the event-stream request), so its pieces come as text-delta events.
	streamRequests := func() int {
		n := 0
		for _, r := range s.Requests() {
			if strings.HasSuffix(r.Path, "/"+convID+"/events") && strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
				n++
			}
		}
		return n
	}
	sctx, stopStream := context.WithCancel(ctx)
	streamDone := make(chan error, 1)
	go func() { streamDone <- m.Stream(sctx, c.Identifier, convID) }()
	waitConv("the stream to connect", "", func() bool { return streamRequests() > 0 })
	if _, err := m.Send(ctx, conversation.Send{Company: c.Identifier, ConversationID: convID, Text: "Tell me a long story about the jacket"}); err != nil {
		t.Fatal(err)
	}
	waitConv("the streamed reply", "", func() bool {
		convMu.Lock()
		n := deltas
		convMu.Unlock()
		return n > 0 && convText(convID, "two-way zip")()
	})
	if _, err := m.Send(ctx, conversation.Send{Company: c.Identifier, ConversationID: convID, Text: "Please exchange it now"}); err != nil {
		t.Fatal(err)
	}
	var convItem fronts.ApprovalItem
	waitConv("the operation in the approval queue", "", func() bool {
		items, err := approvalsFront.List()
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.Interface == approvals.InterfaceConversation && it.Decidable {
				if convItem, err = approvalsFront.Get(it.ID); err != nil {
					t.Fatal(err)
				}
				return true
			}
		}
		return false
	})
	if o, err := approvalsFront.Approve(convItem.ID, convItem.Current.Revision, convItem.Current.Digest); err != nil || o.Status != approvals.StatusDone {
		t.Fatalf("approving the conversation's operation: %+v, %v", o, err)
	}
	waitConv("the exchange confirmation", "", convText(convID, "Exchange confirmed"))
	stopStream()
	if err := <-streamDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the conversation stream: %v", err)
	}
	collectTokens("the conversation")
	cview, centries, err := m.Get(ctx, c.Identifier, convID)
	if err != nil {
		t.Fatal(err)
	}
	sawModel(cview)
	sawModel(centries)
	if cview.UsedAccount != signedIn {
		t.Fatalf("the conversation used account %q, want %q", cview.UsedAccount, signedIn)
	}

	// An API operation asked for as the model would (the jacket's item is exchanged now; the
	// socks are not), approved in the window's Approvals service.
	var openAPI string
	for _, a := range c.Document.APIs {
		if a.Type == "openapi" {
			openAPI = a.URL
		}
	}
	asked, err := h.Queue().CallAPI(ctx, approvals.APICall{Company: c.Identifier, Account: signedIn, API: openAPI, OperationID: "exchangeItem",
		Input:  apis.Input{Path: map[string]string{"id": "ord_7Hk2"}, Body: json.RawMessage(`{"item_id":"itm_9Zt","replacement_sku":"stormline-insulated-m"}`)},
		Intent: map[string]string{"replacement_sku": "stormline-insulated-m"}})
	if err != nil || asked.Status != "waiting_for_user" {
		t.Fatalf("the exchange request: %+v, %v", asked, err)
	}
	item, err := approvalsFront.Get(asked.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	done, err := approvalsFront.Approve(item.ID, item.Current.Revision, item.Current.Digest)
	if err != nil || done.Status != "done" {
		t.Fatalf("the approval: %+v, %v", done, err)
	}
	collectTokens("the approval")

	// A report of a task the model could not do (spec 9.3), through the model's tool in the
	// signed-in Session. Its description carries what a report must not: an order and an item
	// the model saw in the Company's answers, the account's label, an email address and a phone
	// number. Poppydesk removes them before sending; what the Company received is scanned below
	// for them and for every secret.
	reportMustNotCarry := []string{"ord_7Hk2", "itm_9Zt", signedIn, "jane.doe@example.org", "+1 415 555 0142"}
	{
		ct, sst := mcp.NewInMemoryTransports()
		ss, err := h.ModelServer().Connect(ctx, sst, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "canary-model", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "report_unsupported_task", Arguments: map[string]any{"company": c.Identifier,
			"account": signedIn, "task": "Pay with a voucher",
			"description": "Order ord_7Hk2 (item itm_9Zt) of " + signedIn + " could not be paid with a voucher; write to jane.doe@example.org or call +1 415 555 0142."}})
		if err != nil || res.IsError {
			t.Fatalf("report_unsupported_task: %v %+v", err, res)
		}
		sawModel(res.StructuredContent)
		cs.Close()
		ss.Close()
	}
	if len(s.FeedbackReports()) == 0 {
		t.Fatal("the Company received no feedback report")
	}

	// A browser join (spec 6): Debian's headless Chromium, joined to the signed-in Session by
	// the model's browser tool on the Host's model server. The codes the Company issued are
	// scanned for below.
	browserRan := false
	t.Run("browser join", func(t *testing.T) {
		if browserErr != nil {
			if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
				t.Fatalf("POPPYDESK_REQUIRE_E2E=1 but Chromium is missing: %v", browserErr)
			}
			t.Skip("Chromium (/usr/bin/chromium) is not installed; set POPPYDESK_REQUIRE_E2E=1 to make this a failure")
		}
		ct, sst := mcp.NewInMemoryTransports()
		ss, err := h.ModelServer().Connect(ctx, sst, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "canary-model", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"company": c.Identifier, "account": signedIn,
			"url": s.URL(refcompany.ShopHost, "/account")}})
		if err != nil {
			t.Fatalf("browsing signed in: %v", err)
		}
		if txt := toolText(res); res.IsError || !strings.Contains(txt, "signed in as "+signedIn) {
			t.Fatalf("the browser is not joined signed in as %s: %s", signedIn, txt)
		}
		sawModel(res)
		if js := s.Joins(); len(js) == 0 || js[len(js)-1].Account == "" {
			t.Fatalf("the Company recorded no signed-in join: %+v", js)
		}
		browserRan = true
	})
	joinCodes := s.IssuedJoinCodes()
	if browserRan {
		// Control: the collected codes are the ones the engine authorized (the Company received
		// one of them in step 2's body), so scanning for them means something.
		authorized := 0
		for _, r := range s.RequestsTo(refcompany.ShopHost, refcompany.BrowserSessionPath+"/authorize") {
			for _, code := range joinCodes {
				if bytes.Contains(r.Body, []byte(code)) {
					authorized++
				}
			}
		}
		if authorized == 0 {
			t.Fatalf("none of the %d join codes the Company issued reached its authorize endpoint", len(joinCodes))
		}
	}

	// Sign-out (spec 4.6) in the window's Companies service: every refresh token revoked, the
	// tokens deleted from the keyring.
	if err := fronts.New(h).Companies.SignOut(c.Identifier, signedIn); err != nil {
		t.Fatalf("sign-out: %v", err)
	}
	if b, err := secrets.LoadCompany(ctx, identifier, signedIn); err == nil && len(b.Tokens) != 0 {
		t.Fatalf("tokens left in the keyring after sign-out: %d", len(b.Tokens))
	}
	if err := e.FlushExchanges(ctx); err != nil {
		t.Fatal(err)
	}

	// Collect every secret's actual value.
	found := []secret{{"access token marker", markerAT}, {"refresh token marker", markerRT}, {"Agent ID marker", markerAID}}
	for i, v := range issued {
		found = append(found, secret{fmt.Sprintf("token issued by the Company (#%d, from the keyring bundle)", i), v})
	}
	for i, v := range joinCodes {
		found = append(found, secret{fmt.Sprintf("browser join code #%d issued by the Company", i), v})
	}
	names, err := kr.Names(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var delegatedKeys int
	for _, name := range names {
		raw, err := kr.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var item struct {
			Keys      []struct{ D string } `json:"keys"`
			UserID    string               `json:"user_id"`
			AgentID   string               `json:"agent_id"`
			Delegated []struct {
				PrivateJWK struct{ D string } `json:"private_jwk"`
				Delegation string             `json:"delegation"`
			} `json:"delegated"`
			Tokens []store.Token `json:"tokens"`
		}
		if err := json.Unmarshal(raw, &item); err != nil {
			continue // the vault's index item
		}
		for _, k := range item.Keys {
			found = append(found, secret{"root private key d of " + name, k.D})
		}
		for _, d := range item.Delegated {
			delegatedKeys++
			found = append(found, secret{"delegated private key d", d.PrivateJWK.D}, secret{"delegation", d.Delegation})
		}
		found = append(found, secret{"User ID", item.UserID}, secret{"Agent ID", item.AgentID})
		for _, tok := range item.Tokens {
			found = append(found, secret{"access token", tok.AccessToken}, secret{"refresh token", tok.RefreshToken})
		}
	}
	if delegatedKeys < 2 {
		t.Fatalf("the keyring holds %d delegated keys; the rotation did not happen", delegatedKeys)
	}
	sids := map[string]bool{}
	formSecrets := map[string]int{}
	for _, r := range s.Requests() {
		if jwt := r.Header.Get("Poppy-Session"); jwt != "" {
			parts := strings.Split(jwt, ".")
			found = append(found, secret{"Session JWT", jwt}, secret{"Session JWT signature", parts[len(parts)-1]})
			payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var cl struct {
				Sid     string `json:"sid"`
				AgentID string `json:"agent_id"`
			}
			json.Unmarshal(payload, &cl)
			sids[cl.Sid] = true
			// Poppydesk runs one agent, so it sends no Agent ID (spec 5.1), not even the one
			// planted in the identity bundle.
			if cl.AgentID != "" {
				t.Fatalf("the Session JWT carries agent_id %q; Poppydesk sends none", cl.AgentID)
			}
		}
		if a := r.Header.Get("Authorization"); a != "" {
			found = append(found, secret{"Authorization value", a})
		}
		// The form secrets the Company received at its token and revocation endpoints: the
		// authorization code, the PKCE verifier, client assertions, refresh tokens.
		if r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			form, err := url.ParseQuery(string(r.Body))
			if err != nil {
				t.Fatalf("the form the Company received at %s: %v", r.Path, err)
			}
			for _, k := range []string{"code", "code_verifier", "client_assertion", "refresh_token", "token", "device_code"} {
				if v := form.Get(k); v != "" {
					formSecrets[k]++
					found = append(found, secret{k + " sent to " + r.Path, v})
				}
			}
		}
	}
	if formSecrets["code"] == 0 || formSecrets["code_verifier"] == 0 || formSecrets["refresh_token"] == 0 {
		t.Fatalf("the Company received no authorization code, PKCE verifier or refresh token in a form (%v): the sign-in or refresh did not happen", formSecrets)
	}
	if len(sids) < 3 {
		t.Fatalf("the Company saw %d sids; want the signed-out, signed-in and renewed Sessions", len(sids))
	}
	var values []secret
	seen := map[string]bool{}
	for _, sc := range found {
		switch {
		case sc.value == "" || seen[sc.value]:
		case len(sc.value) < 8:
			t.Fatalf("%s is too short to scan for (%d chars)", sc.what, len(sc.value))
		default:
			seen[sc.value] = true
			values = append(values, sc)
		}
	}
	var needles []needle
	for _, sc := range values {
		needles = append(needles, forms(sc)...)
	}

	// The places: the database with its WAL and shared memory while open, each log file, the
	// exchange log read back through the state database, and what the model received.
	exchanges, err := st.ListExchanges(ctx, vault.ExchangeQuery{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var exLog bytes.Buffer
	for _, ex := range exchanges {
		b, _ := json.Marshal(ex)
		exLog.Write(b)
		exLog.Write(ex.RequestBody)
		exLog.Write(ex.ResponseBody)
	}
	// The Inspector's data as the window gets it (timeline, every entry opened, findings), the
	// HAR and curl exports of every exchange, and a `poppydesk check` report against the same
	// Company signed with the Host's own identity.
	var inspData, harData, checkData bytes.Buffer
	{
		in := fronts.New(h).Inspector
		page, err := in.List(fronts.InspectorQuery{Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(page)
		inspData.Write(b)
		var ids []int64
		for _, r := range page.Rows {
			ids = append(ids, r.ID)
			en, err := in.Entry(r.ID)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(en)
			inspData.Write(b)
		}
		fs, _ := in.Findings()
		b, _ = json.Marshal(fs)
		inspData.Write(b)
		har, err := in.ExportHAR(ids)
		if err != nil {
			t.Fatal(err)
		}
		harData.WriteString(har)
		curl, err := in.ExportCurl(ids)
		if err != nil {
			t.Fatal(err)
		}
		harData.WriteString(curl)
		rep, err := conformance.Run(ctx, conformance.Config{Domain: s.Domain, Transport: s.ClientConfig(), Agent: e.Agent(),
			ProbeURL: s.URL(refcompany.ShopHost, "/api/products")})
		if err != nil {
			t.Fatal(err)
		}
		b, _ = json.MarshalIndent(rep, "", "  ")
		checkData.Write(b)
	}
	sessions, err := st.ListSessions(ctx, c.Identifier, account)
	if err != nil || len(sessions) < 2 {
		t.Fatalf("recorded Sessions of the account: %d, %v", len(sessions), err)
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		return b
	}
	logFiles := func() map[string][]byte {
		out := map[string][]byte{}
		entries, err := os.ReadDir(filepath.Dir(logPath))
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			out[en.Name()] = read(filepath.Join(filepath.Dir(logPath), en.Name()))
		}
		return out
	}
	scans := 0
	scan := func(when string, places []place) {
		t.Helper()
		for _, p := range places {
			scans++
			for _, n := range needles {
				if bytes.Contains(p.data, []byte(n.value)) {
					t.Errorf("%s: %s holds a secret: %s (%s)", when, p.name, n.what, n.form)
				}
			}
			if len(p.controls) == 0 {
				t.Errorf("%s: %s has no control value", when, p.name)
			}
			for _, ctl := range p.controls {
				if !bytes.Contains(p.data, []byte(ctl)) {
					t.Errorf("%s: control value %q not found in %s: the scan would not see a leak there", when, ctl, p.name)
				}
			}
		}
	}
	// logPlaces are the log files, each with its controls: records of the Host's JSON log; the
	// current file also the Host's last words before the scan.
	logPlaces := func(last string) []place {
		files := logFiles()
		if _, ok := files[fmt.Sprintf("poppydesk.log.%d", logKeep)]; ok {
			t.Fatalf("the log rotated past its %d kept files, so some of it is gone unscanned", logKeep)
		}
		var out []place
		for name, data := range files {
			p := place{name: "the log file " + name, data: data, controls: []string{`{"time":"`, `"msg":"`}}
			if name == filepath.Base(logPath) {
				p.controls = append(p.controls, last)
			}
			out = append(out, p)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
		return out
	}
	// The Host's last log record before each scan: the sign-out, then the shutdown.
	const signedOutMsg, shutdownMsg = `"msg":"signed out from the window"`, `"msg":"shutdown complete"`

	db, wal, shm := read(statePath), read(statePath+"-wal"), read(statePath+"-shm")
	if !bytes.HasPrefix(db, sqliteHeader) || !isWAL(wal) || !isSHM(shm) {
		t.Fatalf("the state database's files are not what SQLite writes: database %d bytes, WAL %d bytes (header ok %v), shared memory %d bytes (header ok %v)",
			len(db), len(wal), isWAL(wal), len(shm), isSHM(shm))
	}
	dbAndWAL := append(append([]byte{}, db...), wal...)
	open := []place{
		// While open the database file may hold little more than its header (the rest is in the
		// WAL until a checkpoint): its header says it was read.
		{name: "the state database " + app.StateFile, data: db, controls: []string{string(sqliteHeader)}},
		// The WAL holds the latest writes: the last exchanges, the sign-out.
		{name: "its WAL " + app.StateFile + "-wal", data: wal, controls: []string{string(walMagic), c.Identifier, "/oauth/revoke"}},
		// The wal-index holds no text: its header (the index's version) says it was read.
		{name: "its shared memory " + app.StateFile + "-shm", data: shm, controls: []string{string(shmVersion)}},
		{name: "the state database and its WAL", data: dbAndWAL, controls: []string{c.Organization.Name, "/api/orders", c.Identifier,
			asked.ApprovalID, convID, "Please exchange it now", "two-way zip", convItem.ID}},
		{name: "the exchange log rows", data: exLog.Bytes(), controls: []string{"/api/products", redact.Mask, "/token", "/poppy/conversations/" + convID}},
		{name: "what the model received", data: modelSaw.Bytes(), controls: []string{"Exchange confirmed"}},
		{name: "the Inspector's data", data: inspData.Bytes(), controls: []string{"Session JWT (Poppy-Session)", "poppy-delegation+jwt", inspect.Hidden, "/api/products", c.Identifier}},
		{name: "the HAR and curl exports", data: harData.Bytes(), controls: []string{`"version": "1.2"`, "/api/products", "curl", redact.Mask}},
		{name: "check's report", data: checkData.Bytes(), controls: []string{"invalid_session", `"status": "pass"`, s.Domain}},
	}
	if browserRan {
		open[4].controls = append(open[4].controls, refcompany.BrowserSessionPath+"/authorize")
		open[5].controls = append(open[5].controls, "/account")
	}
	logs := logPlaces(signedOutMsg)
	openLogs := len(logs)
	allLogs := place{name: "the log files together", controls: []string{`"level":"DEBUG"`, "/api/orders", "Session started", in.SID(), convID, "browser"}}
	for _, p := range logs {
		allLogs.data = append(allLogs.data, p.data...)
	}
	scan("while open", append(append(open, logs...), allLogs))
	// The feedback reports as the Company received them: no secret, and none of what a report
	// must not carry; the task phrase is their control.
	var reports []byte
	for _, r := range s.FeedbackReports() {
		reports = append(append(reports, r.Body...), r.Description...)
	}
	scans++
	if !bytes.Contains(reports, []byte("Pay with a voucher")) {
		t.Error("the feedback reports the Company received lack their task: the scan would not see a leak there")
	}
	for _, n := range needles {
		if bytes.Contains(reports, []byte(n.value)) {
			t.Errorf("a feedback report the Company received holds a secret: %s (%s)", n.what, n.form)
		}
	}
	for _, v := range reportMustNotCarry {
		if bytes.Contains(reports, []byte(v)) {
			t.Errorf("a feedback report the Company received holds %q, which Poppydesk must remove (spec 9.3)", v)
		}
	}
	for sid := range sids { // sids are not secret: they are recorded (control)
		if !bytes.Contains(dbAndWAL, []byte(sid)) {
			t.Errorf("sid %s is not recorded in the state database", sid)
		}
	}

	// After closing (the WAL checkpointed into the database), scan again.
	f.Close()
	if err := rf.Close(); err != nil {
		t.Fatal(err)
	}
	db, wal, shm = read(statePath), read(statePath+"-wal"), read(statePath+"-shm")
	closed := []place{{name: "the state database " + app.StateFile + " after close", data: db,
		controls: []string{string(sqliteHeader), c.Organization.Name, "/api/orders", c.Identifier, asked.ApprovalID, convID, "two-way zip"}}}
	// SQLite removes the WAL and the shared memory when the last connection closes; what is
	// left of them is scanned with its header as control.
	if len(wal) > 0 {
		closed = append(closed, place{name: "its WAL after close", data: wal, controls: []string{string(walMagic)}})
	}
	if len(shm) > 0 {
		closed = append(closed, place{name: "its shared memory after close", data: shm, controls: []string{string(shmVersion)}})
	}
	logs = logPlaces(shutdownMsg)
	scan("after close", append(closed, logs...))

	formNames := map[string]bool{}
	for _, n := range needles {
		formNames[n.form] = true
	}
	t.Logf("scanned for %d secret values in %d forms (%d needles: as is, base64 std/url padded/raw and inside longer data at each offset, hex, HEX, URL query/path escape, JSON escape with/without HTML, decoded, first and last %d characters); %d Company-issued tokens, %d join codes, form fields the Company received by kind %v",
		len(values), len(formNames), len(needles), prefixLen, len(issued), len(joinCodes), formSecrets)
	t.Logf("%d place scans (while open: database, WAL, shared memory, database+WAL, exchange log rows, what the model received, %d log files, the log files together; after close: database, %d more, %d log files), each with a control; %d exchanges, %d sids, %d transcript entries, browser joined: %v",
		scans, openLogs, len(closed)-1, len(logs), len(exchanges), len(sids), len(centries), browserRan)
}

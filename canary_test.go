package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/apis"
	"github.com/poppydesk/poppydesk/agentcore/approvals"
	"github.com/poppydesk/poppydesk/agentcore/browserjoin"
	"github.com/poppydesk/poppydesk/agentcore/conversation"
	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/identity"
	"github.com/poppydesk/poppydesk/agentcore/modelapi"
	"github.com/poppydesk/poppydesk/agentcore/oauth"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/redact"
	"github.com/poppydesk/poppydesk/agentcore/store"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/app"
	"github.com/poppydesk/poppydesk/browser"
	"github.com/poppydesk/poppydesk/vault"
)

// canaryKeyring returns a real Secret Service keyring under a throwaway service name, deleted
// at the end. Without a reachable Secret Service the test skips, unless
// POPPYDESK_REQUIRE_KEYRING=1 (scripts/with-keyring.sh sets it), which makes it fail.
func canaryKeyring(t *testing.T) *vault.Keyring {
	t.Helper()
	unavailable := func(why string) {
		msg := why + "; run `bash scripts/with-keyring.sh go test -run Canary -v .`"
		if os.Getenv("POPPYDESK_REQUIRE_KEYRING") == "1" {
			t.Fatal("POPPYDESK_REQUIRE_KEYRING=1 but " + msg)
		}
		t.Skip(msg)
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		unavailable("there is no D-Bus session, so no Secret Service")
	}
	kr := vault.NewKeyring(vault.KeyringOptions{Service: "poppydesk-canary-" + randHex(6)})
	ctx := context.Background()
	if _, err := kr.Get(ctx, "probe"); err != nil && !errors.Is(err, fs.ErrNotExist) {
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

type canaryClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *canaryClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *canaryClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestCanaryNoSecretLeaves is the issue-4 canary (DESIGN.md invariant 5): the whole engine runs
// against the real OS keyring and a real SQLite state file, logging at DEBUG through a JSON
// handler with redact.ReplaceAttr into a file. Secrets that can carry a marker get one (access
// token, refresh token, Agent ID); for the others (root and delegated private keys, User ID,
// delegations, every Session JWT and Authorization value the Company received) the actual values
// are collected after the run. The run covers discovery, signed-out and signed-in requests, a
// session_ended renewal and a delegation rotation. Then the database, its -wal and -shm, the log
// file and the exchange log must contain none of them, while non-secret control values are found.
func TestCanaryNoSecretLeaves(t *testing.T) {
	kr := canaryKeyring(t)
	ctx := context.Background()
	secrets := store.NewSecrets(kr)
	clock := &canaryClock{t: time.Now().Truncate(time.Second)}
	dir := t.TempDir()
	statePath := filepath.Join(dir, "state.db")
	logPath := filepath.Join(dir, "poppydesk.log")

	s, err := poppytest.New(poppytest.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logger := slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: redact.ReplaceAttr}))

	markerAT := "CANARY-AT-" + randHex(8)
	markerRT := "CANARY-RT-" + randHex(8)
	markerAID := "CANARY-AID-" + randHex(8)
	const account = "canary-account"

	tc := s.ClientConfig()
	var observerMu sync.Mutex
	var onResponse func(transport.Exchange)
	tc.Observer = func(ex transport.Exchange) {
		observerMu.Lock()
		fn := onResponse
		observerMu.Unlock()
		if fn != nil {
			fn(ex)
		}
	}
	e, st, closeEngine, err := openEngine(ctx, statePath, engine.Config{
		Transport: tc,
		Identity:  identity.Config{ClientID: s.URL(poppytest.AgentHost, "/agent.json"), ClientName: "Poppydesk canary"},
		Secrets:   secrets,
		Logger:    logger,
		Now:       clock.Now,
		AgentID:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			closeEngine(ctx)
		}
	}()
	s.AddHost(poppytest.AgentHost, e.Agent().Handler(logger))

	// Plant the markers: the Agent ID in the Company's identity bundle, the tokens in the
	// account's bundle, and the access token at the Company.
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

	// The run.
	c, err := e.Discover(ctx, s.Domain)
	if err != nil {
		t.Fatal(err)
	}
	get := func(cl *engine.Client, path string) {
		t.Helper()
		resp, err := cl.Do(ctx, &transport.Request{Method: http.MethodGet, URL: s.URL(poppytest.ShopHost, path)})
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
			once.Do(func() { s.SetFault(poppytest.FaultSessionEnded, false) })
		}
	}
	observerMu.Unlock()
	if err := s.SetFault(poppytest.FaultSessionEnded, true); err != nil {
		t.Fatal(err)
	}
	get(in, "/api/orders")
	// Past the rotation point (12 h delegations rotate 1 h before exp): new delegated keys.
	clock.Add(11*time.Hour + 30*time.Minute)
	get(out, "/api/products")
	get(in, "/api/orders")

	// Tokens the reference Company issues cannot carry a marker, so their ACTUAL values are
	// collected from the keyring bundle after every step (sign-in, refresh, approval) and scanned
	// for like the markers.
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
	// A REAL Direct Sign-In (spec 4.2): the engine's OAuth client over its own transport, the
	// reference Company playing the user's browser on its consent page.
	oc, err := oauth.New(oauth.Config{Transport: e.Transport(), Identity: e.Agent(), Secrets: secrets, Now: clock.Now,
		Logger: logger, DirectTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.SetOAuth(oc)
	scopes := []string{"orders:read", "orders:write"}
	flow, err := oc.StartDirect(ctx, oauth.SignInRequest{Company: c, Account: signedIn, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ApproveSignIn(ctx, flow.URL, "canary@shop.example", scopes); err != nil {
		t.Fatal(err)
	}
	if _, err := flow.Wait(ctx); err != nil {
		t.Fatalf("Direct Sign-In: %v", err)
	}
	collectTokens("the sign-in")
	signed, err := e.Client(ctx, c.Identifier, signedIn)
	if err != nil {
		t.Fatal(err)
	}
	get(signed, "/api/orders")
	// A refresh (spec 4.4): the Company expires every access token; the next signed-in call gets
	// invalid_token, and the engine refreshes through its OAuth wiring and retries.
	before := len(issued)
	s.ExpireAccessTokens()
	get(signed, "/api/orders")
	collectTokens("the refresh")
	if fresh := issued[before:]; fresh[0] == issued[0] || fresh[1] == issued[1] {
		t.Fatal("the access and refresh tokens did not change: no refresh happened")
	}
	// The approval queue (Operations 5-7) and a conversation with the reference Company Agent
	// (spec 8) over the same SQLite file: the queue's items and decision log, and the
	// conversation's record and transcript (conversation_entries), both with the *vault.State the
	// window passes them. An operation in a Company message goes to the queue, and its approval
	// back through the Manager (Operations 4, 6).
	var openAPI string
	for _, a := range c.Document.APIs {
		if a.Type == "openapi" {
			openAPI = a.URL
		}
	}
	var q *approvals.Queue
	var convMu sync.Mutex
	var deltas, authNeeds int
	m, err := conversation.New(conversation.Config{Engine: e, Store: st, Logger: logger, Now: clock.Now,
		OnUpdate: func(u conversation.Update) {
			convMu.Lock()
			defer convMu.Unlock()
			switch u.Kind {
			case conversation.UpdateDelta:
				deltas++
			case conversation.UpdateAuthorization:
				authNeeds++
			}
		},
		OnOperation: func(ctx context.Context, f conversation.OperationFound) {
			if _, err := q.ProposeFromConversation(ctx, f); err != nil {
				t.Errorf("the operation in the conversation did not reach the queue: %v", err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	q, err = approvals.New(approvals.Config{Engine: e, Store: st, Conversations: m, Logger: logger, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	// What the model would receive of the conversation and the browser (modelapi hands it
	// Views, entries and BrowseResults): scanned like the files.
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
		deadline := time.Now().Add(10 * time.Second)
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
	// Signed out first: the exchange needs the account, so the Company Agent sends an
	// authorization event with the challenge (spec 8.11); after sign-in the same conversation
	// continues with the token.
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
	// A streamed reply (spec 8.6), then the exchange offer, approved through the queue.
	sctx, stopStream := context.WithCancel(ctx)
	streamDone := make(chan error, 1)
	go func() { streamDone <- m.Stream(sctx, c.Identifier, convID) }()
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
	var convItem approvals.Item
	waitConv("the operation in the approval queue", "", func() bool {
		items, err := q.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.Interface == approvals.InterfaceConversation && it.State == "pending" {
				convItem = it
				return true
			}
		}
		return false
	})
	if o, err := q.Approve(ctx, convItem.ID, convItem.Current.Revision, convItem.Current.Digest); err != nil || o.Status != approvals.StatusDone {
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
	// An API operation (the jacket's item is exchanged now; the socks are not).
	asked, err := q.CallAPI(ctx, approvals.APICall{Company: c.Identifier, Account: signedIn, API: openAPI, OperationID: "exchangeItem",
		Input:  apis.Input{Path: map[string]string{"id": "ord_7Hk2"}, Body: json.RawMessage(`{"item_id":"itm_9Zt","replacement_sku":"stormline-insulated-m"}`)},
		Intent: map[string]string{"replacement_sku": "stormline-insulated-m"}})
	if err != nil || asked.Status != "waiting_for_user" {
		t.Fatalf("the exchange request: %+v, %v", asked, err)
	}
	item, err := q.Get(ctx, asked.ApprovalID)
	if err != nil {
		t.Fatal(err)
	}
	done, err := q.Approve(ctx, item.ID, item.Current.Revision, item.Current.Digest)
	if err != nil || done.Status != "done" {
		t.Fatalf("the approval: %+v, %v", done, err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	collectTokens("the approval")
	// A browser join (spec 6): Debian's headless Chromium, joined to the signed-in Session
	// through the window's Browser service and the model's browser action. The codes the
	// Company issued are scanned for below.
	browserRan := false
	t.Run("browser join", func(t *testing.T) {
		chrome, err := exec.LookPath("/usr/bin/chromium")
		if err != nil {
			if os.Getenv("POPPYDESK_REQUIRE_E2E") == "1" {
				t.Fatalf("POPPYDESK_REQUIRE_E2E=1 but Chromium is missing: %v", err)
			}
			t.Skip("Chromium (/usr/bin/chromium) is not installed; set POPPYDESK_REQUIRE_E2E=1 to make this a failure")
		}
		spki := leafSPKIOf(s)
		if spki == "" {
			t.Fatal("could not read the reference Company's certificate for the browser to trust")
		}
		mgr := &browser.Manager{Root: filepath.Join(dir, "browser"), Base: browser.Options{ExecPath: chrome, TrustSPKI: []string{spki}, Logger: logger}}
		defer mgr.Close()
		_, model := app.NewBrowser(app.BrowserConfig{Manager: mgr, Log: logger, Now: clock.Now,
			Engine: func() (*engine.Engine, browserjoin.StatusFunc) { return e, browserjoin.OAuthStatus(oc) }})
		res, err := model.Browse(ctx, modelapi.BrowseRequest{Action: "open", Company: c.Identifier, Account: signedIn, URL: s.URL(poppytest.ShopHost, "/account")})
		if err != nil {
			t.Fatalf("browsing signed in: %v", err)
		}
		if !strings.Contains(res.Joined, "signed in as "+signedIn) {
			t.Fatalf("the browser is %q, want joined signed in as %s", res.Joined, signedIn)
		}
		res.PNG = nil
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
		for _, r := range s.RequestsTo(poppytest.ShopHost, poppytest.BrowserSessionPath+"/authorize") {
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
	// Sign-out (spec 4.6): every refresh token revoked, the tokens deleted from the keyring.
	if err := e.SignOut(ctx, c.Identifier, signedIn); err != nil {
		t.Fatalf("sign-out: %v", err)
	}
	if b, err := secrets.LoadCompany(ctx, identifier, signedIn); err == nil && len(b.Tokens) != 0 {
		t.Fatalf("tokens left in the keyring after sign-out: %d", len(b.Tokens))
	}

	if err := e.FlushExchanges(ctx); err != nil {
		t.Fatal(err)
	}

	// Collect every secret's actual value.
	type secret struct{ what, value string }
	secretsFound := []secret{{"access token marker", markerAT}, {"refresh token marker", markerRT}, {"Agent ID marker", markerAID}}
	for i, v := range issued {
		secretsFound = append(secretsFound, secret{fmt.Sprintf("token issued by the Company (#%d, from the keyring bundle)", i), v})
	}
	for i, v := range joinCodes {
		secretsFound = append(secretsFound, secret{fmt.Sprintf("browser join code #%d issued by the Company", i), v})
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
			secretsFound = append(secretsFound, secret{"root private key d of " + name, k.D})
		}
		for _, d := range item.Delegated {
			delegatedKeys++
			secretsFound = append(secretsFound, secret{"delegated private key d", d.PrivateJWK.D}, secret{"delegation", d.Delegation})
		}
		secretsFound = append(secretsFound, secret{"User ID", item.UserID}, secret{"Agent ID", item.AgentID})
		for _, tok := range item.Tokens {
			secretsFound = append(secretsFound, secret{"access token", tok.AccessToken}, secret{"refresh token", tok.RefreshToken})
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
			secretsFound = append(secretsFound, secret{"Session JWT", jwt}, secret{"Session JWT signature", parts[len(parts)-1]})
			payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var cl struct {
				Sid     string `json:"sid"`
				AgentID string `json:"agent_id"`
			}
			json.Unmarshal(payload, &cl)
			sids[cl.Sid] = true
			if cl.AgentID != markerAID {
				t.Fatalf("the Session JWT carries agent_id %q, not the planted marker", cl.AgentID)
			}
		}
		if a := r.Header.Get("Authorization"); a != "" {
			secretsFound = append(secretsFound, secret{"Authorization value", a})
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
					secretsFound = append(secretsFound, secret{k + " sent to " + r.Path, v})
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
	var nonEmpty []secret
	for _, sc := range secretsFound {
		if len(sc.value) >= 8 {
			nonEmpty = append(nonEmpty, sc)
		} else if sc.value != "" {
			t.Fatalf("%s is too short to scan for (%d chars)", sc.what, len(sc.value))
		}
	}

	// What the scan reads: the database with its WAL and shared memory while open, the log file
	// and the exchange log read back through vault.State.
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
	scan := func(label string, files map[string][]byte) {
		for name, data := range files {
			for _, sc := range nonEmpty {
				if bytes.Contains(data, []byte(sc.value)) {
					t.Errorf("%s: %s holds a secret: %s", label, name, sc.what)
				}
			}
		}
	}
	openFiles := map[string][]byte{
		"state.db": read(statePath), "state.db-wal": read(statePath + "-wal"), "state.db-shm": read(statePath + "-shm"),
		"poppydesk.log": read(logPath), "exchange log rows": exLog.Bytes(), "what the model received": modelSaw.Bytes(),
	}
	scan("while open", openFiles)

	// Control values: the scan reads what it should.
	db := append(append([]byte{}, openFiles["state.db"]...), openFiles["state.db-wal"]...)
	for _, ctl := range []struct {
		where string
		data  []byte
		value string
	}{
		{"the state database", db, "Shop (reference Company)"},
		{"the state database", db, "/api/orders"},
		{"the state database", db, c.Identifier},
		{"the log file", openFiles["poppydesk.log"], "/api/orders"},
		{"the log file", openFiles["poppydesk.log"], "Session started"},
		{"the log file", openFiles["poppydesk.log"], in.SID()},
		{"the exchange log", exLog.Bytes(), "/api/products"},
		{"the exchange log", exLog.Bytes(), redact.Mask},
		{"the exchange log", exLog.Bytes(), "/token"},
		{"the state database", db, asked.ApprovalID},
		{"the state database", db, convID},
		{"the state database", db, "Please exchange it now"},
		{"the state database", db, "two-way zip"},
		{"the state database", db, convItem.ID},
		{"the log file", openFiles["poppydesk.log"], convID},
		{"the exchange log", exLog.Bytes(), "/poppy/conversations/" + convID},
		{"what the model received", modelSaw.Bytes(), "Exchange confirmed"},
	} {
		if !bytes.Contains(ctl.data, []byte(ctl.value)) {
			t.Errorf("control value %q not found in %s: the scan would not see a leak there", ctl.value, ctl.where)
		}
	}
	if browserRan {
		for _, ctl := range []struct {
			where string
			data  []byte
			value string
		}{
			{"the exchange log", exLog.Bytes(), poppytest.BrowserSessionPath + "/authorize"},
			{"the log file", openFiles["poppydesk.log"], "browser"},
			{"what the model received", modelSaw.Bytes(), "/account"},
		} {
			if !bytes.Contains(ctl.data, []byte(ctl.value)) {
				t.Errorf("control value %q not found in %s: the scan would not see a leak there", ctl.value, ctl.where)
			}
		}
	}
	for sid := range sids { // sids are not secret: they are recorded (control)
		if !bytes.Contains(db, []byte(sid)) {
			t.Errorf("sid %s is not recorded in the state database", sid)
		}
	}

	// After closing (WAL checkpointed into the database), scan again.
	closed = true
	if err := closeEngine(ctx); err != nil {
		t.Fatal(err)
	}
	logFile.Sync()
	scan("after close", map[string][]byte{
		"state.db": read(statePath), "state.db-wal": read(statePath + "-wal"), "state.db-shm": read(statePath + "-shm"),
		"poppydesk.log": read(logPath),
	})
	t.Logf("scanned for %d values (%d Company-issued, %d join codes, form fields the Company received, counted by kind: %v); %d exchanges, %d sids, %d transcript entries, browser joined: %v",
		len(nonEmpty), len(issued), len(joinCodes), formSecrets, len(exchanges), len(sids), len(centries), browserRan)
}

package refcompany

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Faults of the Operations extension v2 (each breaks one rule, or stresses the engine, on purpose).
const (
	// FaultSummaryHostile: summaries carry links, images, raw HTML, bidi override characters and
	// very long text (Operations 3 "Formatting", spec 10.1).
	FaultSummaryHostile = "summary-hostile"
	// FaultTermsMismatch: terms name another replacement_sku than the summary and the request
	// (Operations 5: the Personal Agent checks terms against both).
	FaultTermsMismatch = "terms-mismatch"
	// FaultNewRevisionOnRetry: an approved request is answered with a new revision of the same
	// operation instead of being performed (Operations 6 check 3, 7 "A new operation in answer to
	// a retry doesn't say").
	FaultNewRevisionOnRetry = "new-revision-on-retry"
	// FaultInProgress503: the first N approved tries of each operation get HTTP 503 with
	// Retry-After while it is "being performed" (Operations 7); N is SetInProgressTries (default 2).
	FaultInProgress503 = "in-progress-503"
	// FaultLoseResponse: the first time an operation is performed, the connection is dropped after
	// performing it (HTTP 502 where it cannot be dropped); the retry with the same approval must
	// get the first response (Operations 7).
	FaultLoseResponse = "lose-response-after-perform"
	// FaultReusedRevision: a new set of terms for an operation reuses its latest revision string
	// (breaks Operations 3 "New terms": two sets of terms under one revision).
	FaultReusedRevision = "reused-revision"
)

// Interfaces an operation can come through.
const (
	InterfaceAPI = "api"
	InterfaceMCP = "mcp"
)

// LedgerEntry is one performed operation: the reference Company's record that it exchanged an
// item. At most one entry exists per operation (Operations 7).
type LedgerEntry struct {
	OperationID    string
	Revision       string // the approved revision
	Interface      string // InterfaceAPI or InterfaceMCP
	OrderID        string
	ItemID         string
	ReplacementSKU string
	ClientID       string
	UserID         string
	SID            string
	Account        string // "" for a signed-out Session
	At             time.Time
}

// DefaultOperationTTL is how long a revision can be approved (Operations 3 "Expiry").
const DefaultOperationTTL = 10 * time.Minute

// DefaultAccount is the account every access token acts on unless SetTokenAccount says otherwise.
const DefaultAccount = "acct_demo"

// opStore is the reference Company's operation state and order data, a field of Server
// (server.go), so it ends with the Server. Its faults are listed in Faults (server.go).
type opStore struct {
	s *Server

	mu       sync.Mutex
	ttl      time.Duration
	tries503 int
	accounts map[string]string // access token → account
	orders   map[string]*order
	ops      map[string]*opRecord // by operation_id
	byAction map[string]string    // action key → operation_id
	ledger   []LedgerEntry

	mcpOnce sync.Once
	mcp     http.Handler
	calls   map[string]mcpCaller // Poppy-Session JWT → verified caller, while its HTTP request runs

	noReplay   bool               // SetNoReplay (received.go)
	received   []ApprovalReceived // every request that carried an approval (received.go)
	onApproval func(ApprovalReceived)
}

func (s *Server) ops() *opStore { return s.opState() }

func newOpStore(s *Server) *opStore {
	return &opStore{s: s, ttl: DefaultOperationTTL, tries503: 2, accounts: map[string]string{}, orders: seedOrders(),
		ops: map[string]*opRecord{}, byAction: map[string]string{}, calls: map[string]mcpCaller{}}
}

// Ledger returns every operation the reference Company performed, in order.
func (s *Server) Ledger() []LedgerEntry {
	st := s.ops()
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]LedgerEntry(nil), st.ledger...)
}

// SetOperationTTL sets how long new revisions can be approved (default DefaultOperationTTL).
func (s *Server) SetOperationTTL(d time.Duration) {
	st := s.ops()
	st.mu.Lock()
	st.ttl = d
	st.mu.Unlock()
}

// SetInProgressTries sets N for the in-progress-503 fault: the first N approved tries of each
// operation get 503 with Retry-After (default 2).
func (s *Server) SetInProgressTries(n int) {
	st := s.ops()
	st.mu.Lock()
	st.tries503 = n
	st.mu.Unlock()
}

// SetTokenAccount makes an access token act on account (default DefaultAccount). The account
// decides who can approve a signed-in operation (Operations 3 "Who can approve it").
func (s *Server) SetTokenAccount(token, account string) {
	st := s.ops()
	st.mu.Lock()
	st.accounts[token] = account
	st.mu.Unlock()
}

func (st *opStore) accountOf(token string) string {
	if token == "" {
		return ""
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if a, ok := st.accounts[token]; ok {
		return a
	}
	return DefaultAccount
}

// caller is who makes a request, after the Session and token checks (spec 5.3, 7).
type caller struct {
	ClientID, UserID, SID string
	Account               string // "" when signed out
}

// scope is who can approve an operation returned to this caller (Operations 3 "Who can approve
// it"): signed out, only the Session; signed in, any Session of the same Personal Agent and User
// signed in to the same account.
func (c caller) scope() string {
	if c.Account == "" {
		return "session|" + c.ClientID + "|" + c.SID
	}
	return "account|" + c.ClientID + "|" + c.UserID + "|" + c.Account
}

// exchangeAsk is what an exchange request asks for.
type exchangeAsk struct {
	OrderID        string `json:"order_id"`
	ItemID         string `json:"item_id"`
	ReplacementSKU string `json:"replacement_sku"`
}

func (a exchangeAsk) key() string { return a.OrderID + "|" + a.ItemID + "|" + a.ReplacementSKU }

// approvalRef is an approval as received (Operations 6).
type approvalRef struct{ OperationID, Revision string }

type opRecord struct {
	ID        string
	Scope     string
	Action    string // scope + order + item: what the operation is for
	Revisions map[string]*revisionRecord
	Latest    string
	Performed *performedRecord
	Tries503  int
	LostOnce  bool
}

type revisionRecord struct {
	ID        string
	Asked     exchangeAsk // what the request asked for; check 3 compares it
	Interface string
	Wire      operationWire
	ExpiresAt time.Time
}

type performedRecord struct {
	Revision string
	Result   json.RawMessage // the exchange as first answered
	At       time.Time
}

// operationWire is the operation object (Operations 3).
type operationWire struct {
	OperationID string         `json:"operation_id"`
	Revision    string         `json:"revision"`
	Summary     string         `json:"summary"`
	Terms       map[string]any `json:"terms,omitempty"`
	ExpiresAt   string         `json:"expires_at"`
}

type outcomeKind int

const (
	outNeedApproval outcomeKind = iota // return the operation (Operations 4)
	outPerformed                       // performed now
	outReplay                          // performed earlier: the first response (Operations 7)
	outInProgress                      // 503 + Retry-After (Operations 7)
	outFailed                          // business error, nothing performed
	outChallenge                       // the account is needed (Operations 3 "Who can approve it")
)

type outcome struct {
	kind      outcomeKind
	op        operationWire
	result    json.RawMessage
	status    int // for outFailed
	code      string
	desc      string
	loseFirst bool // FaultLoseResponse: drop this response
}

// decide decides one exchange request, with or without an approval, as Operations 6 "What the
// Company checks" and 7 say (exchange, received.go, records it). It is the same for the API and the
// MCP tool.
func (st *opStore) decide(c caller, iface string, ask exchangeAsk, appr *approvalRef) outcome {
	s := st.s
	now := s.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	if appr != nil {
		if op := st.ops[appr.OperationID]; op != nil {
			switch {
			case op.Scope != c.scope() && c.Account == "" && strings.HasPrefix(op.Scope, "account|"+c.ClientID+"|"+c.UserID+"|"):
				// Check 1: a signed-out Session of the same Personal Agent and User gets a
				// challenge for the account.
				return outcome{kind: outChallenge}
			case op.Scope != c.scope():
				// Check 1 fails: handled as if the request had no approval.
			case op.Action != st.action(c, ask):
				// The approval names an operation for another action: check 3 fails for this
				// request (replaying another action's response would misreport).
				return st.issue(c, iface, ask, now, "")
			case op.Performed != nil && !st.noReplay && !s.fault(FaultApprovalPerformsAgain):
				// Check 2: performed already: the first response (Operations 7).
				return outcome{kind: outReplay, result: op.Performed.Result}
			default:
				rev := op.Revisions[appr.Revision]
				if rev == nil || now.After(rev.ExpiresAt) || rev.Asked.key() != ask.key() || rev.Interface != iface {
					// Check 3 fails: a new revision for what the request asks, never the one
					// named.
					return st.issue(c, iface, ask, now, appr.Revision)
				}
				if s.fault(FaultNewRevisionOnRetry) {
					return st.issue(c, iface, ask, now, appr.Revision)
				}
				if s.fault(FaultInProgress503) && op.Tries503 < st.tries503 {
					op.Tries503++
					return outcome{kind: outInProgress}
				}
				return st.perform(c, iface, op, rev, now)
			}
		}
	}
	if o, bad := st.validate(c, ask); bad {
		return o
	}
	return st.issue(c, iface, ask, now, "")
}

func actionKey(c caller, a exchangeAsk) string { return c.scope() + "|" + a.OrderID + "|" + a.ItemID }

// action is the key of the action a request asks for (actionKey), or under the fault
// FaultOperationIDShared (lenient.go) the account alone: one operation for all its actions.
func (st *opStore) action(c caller, a exchangeAsk) string {
	if st.s.fault(FaultOperationIDShared) {
		return c.scope()
	}
	return actionKey(c, a)
}

// validate checks the request as the Company would without operations (order, item, SKU).
func (st *opStore) validate(c caller, a exchangeAsk) (outcome, bool) {
	o := st.orders[a.OrderID]
	if o == nil || o.Account != c.Account {
		return outcome{kind: outFailed, status: http.StatusNotFound, code: "order_not_found", desc: "no order " + strconv.Quote(a.OrderID) + " in this account"}, true
	}
	it := o.item(a.ItemID)
	if it == nil {
		return outcome{kind: outFailed, status: http.StatusNotFound, code: "item_not_found", desc: "no item " + strconv.Quote(a.ItemID) + " on order " + o.ID}, true
	}
	if it.ExchangedFor != "" {
		return outcome{kind: outFailed, status: http.StatusConflict, code: "already_exchanged", desc: "item " + it.ID + " was already exchanged for " + it.ExchangedFor}, true
	}
	if _, ok := catalog[a.ReplacementSKU]; !ok || a.ReplacementSKU == it.SKU {
		return outcome{kind: outFailed, status: http.StatusUnprocessableEntity, code: "invalid_replacement", desc: "replacement_sku " + strconv.Quote(a.ReplacementSKU) + " is not a product this item can be exchanged for"}, true
	}
	return outcome{}, false
}

// issue returns the operation for what the request asks, with a new revision (never notRev, the
// revision an approval named: Operations 6).
func (st *opStore) issue(c caller, iface string, ask exchangeAsk, now time.Time, notRev string) outcome {
	if o, bad := st.validate(c, ask); bad {
		return o
	}
	s := st.s
	action := st.action(c, ask)
	op := st.ops[st.byAction[action]]
	if op == nil || op.Performed != nil {
		op = &opRecord{ID: "exc_" + randomID(6), Scope: c.scope(), Action: action, Revisions: map[string]*revisionRecord{}}
		st.ops[op.ID] = op
		st.byAction[action] = op.ID
	}
	if prev := op.Revisions[op.Latest]; s.fault(FaultOperationIgnoresChange) && prev != nil && now.Before(prev.ExpiresAt) && prev.ID != notRev {
		return outcome{kind: outNeedApproval, op: prev.Wire} // the fault (lenient.go): the terms of another request
	}
	exp := now.Add(st.ttl).Truncate(time.Second)
	revID := strconv.FormatInt(exp.Unix(), 10) + "-" + randomID(9)
	if prev := op.Revisions[op.Latest]; s.fault(FaultReusedRevision) && prev != nil && prev.Asked.key() != ask.key() {
		revID = prev.ID // the fault: new terms under an old revision
	}
	for revID == notRev { // cannot happen with random IDs; kept as the rule's guard
		revID = strconv.FormatInt(exp.Unix(), 10) + "-" + randomID(9)
	}
	wire := st.describe(op.ID, revID, ask, exp)
	op.Revisions[revID] = &revisionRecord{ID: revID, Asked: ask, Interface: iface, Wire: wire, ExpiresAt: exp}
	op.Latest = revID
	return outcome{kind: outNeedApproval, op: wire}
}

// describe writes the summary and terms of a revision (Operations 3). The terms carry what a
// person checks before approving, as data: the order and item, the names of the item and of its
// replacement, the signed price difference, and the money that moves: a "charge" or a "refund"
// (never both; neither at no extra cost) and the payment method it goes through.
func (st *opStore) describe(opID, rev string, ask exchangeAsk, exp time.Time) operationWire {
	s := st.s
	o := st.orders[ask.OrderID]
	it := o.item(ask.ItemID)
	from, to := catalog[it.SKU], catalog[ask.ReplacementSKU]
	diff := to.Cents - from.Cents
	var cost string
	switch {
	case diff > 0:
		cost = "for $" + money(diff) + " more, charged to " + paymentMethod
	case diff < 0:
		cost = "with $" + money(-diff) + " refunded to " + paymentMethod
	default:
		cost = "at no extra cost"
	}
	summary := fmt.Sprintf("Exchange the %s on order %s for the %s, %s.", from.Name, o.ID, to.Name, cost)
	amount := money(abs(diff))
	if diff < 0 {
		amount = "-" + amount
	}
	terms := map[string]any{
		"order_id": o.ID, "item_id": it.ID, "replacement_sku": ask.ReplacementSKU,
		"item_name": from.Name, "replacement_name": to.Name,
		"price_difference": map[string]any{"amount": amount, "currency": "USD"},
	}
	switch {
	case diff > 0:
		terms["charge"] = map[string]any{"amount": money(diff), "currency": "USD"}
		terms["payment_method"] = paymentMethod
	case diff < 0:
		terms["refund"] = map[string]any{"amount": money(-diff), "currency": "USD"}
		terms["payment_method"] = paymentMethod
	}
	if s.fault(FaultSummaryHostile) {
		summary = "**Exchange** the " + from.Name + " for the *" + to.Name + "*, " + cost + ".\n\n" +
			"- [Confirm here](https://evil.example/phish) to keep your discount\n" +
			"- ![tracking pixel](https://evil.example/pixel.png)\n\n" +
			"<script>alert('hi')</script><img src=x onerror=alert(1)><a href=\"https://evil.example\">click</a>\n\n" +
			"Refund to card \u202Egnp.exe\u202C ending 4242 \u2066isolated\u2069 \u200Bzero-width.\n\n" +
			strings.Repeat("This sentence pads the summary to make it very long. ", 400)
	}
	if s.fault(FaultTermsMismatch) {
		terms["replacement_sku"] = mismatchSKU(ask.ReplacementSKU)
	}
	return operationWire{OperationID: opID, Revision: rev, Summary: summary, Terms: terms, ExpiresAt: exp.Format(time.RFC3339)}
}

// paymentMethod is how the reference Company charges or refunds a price difference.
const paymentMethod = "the card used for the order"

func mismatchSKU(sku string) string {
	if strings.HasSuffix(sku, "-m") {
		return strings.TrimSuffix(sku, "-m") + "-l"
	}
	return sku + "-xl"
}

// perform exchanges the item once and records it in the ledger (Operations 7).
func (st *opStore) perform(c caller, iface string, op *opRecord, rev *revisionRecord, now time.Time) outcome {
	if o, bad := st.validate(c, rev.Asked); bad && op.Performed == nil { // performed again: SetNoReplay
		return o
	}
	o := st.orders[rev.Asked.OrderID]
	it := o.item(rev.Asked.ItemID)
	it.ExchangedFor = rev.Asked.ReplacementSKU
	exID := "exg_" + randomID(6)
	result, _ := json.Marshal(map[string]any{"exchange": map[string]any{
		"id": exID, "operation_id": op.ID, "order_id": o.ID, "item_id": it.ID, "replacement_sku": rev.Asked.ReplacementSKU,
		"price_difference": rev.Wire.Terms["price_difference"], "status": "confirmed",
	}, "message": "Exchange confirmed. The " + catalog[rev.Asked.ReplacementSKU].Name + " ships within 2 days; return the original within 30 days."})
	op.Performed = &performedRecord{Revision: rev.ID, Result: result, At: now}
	st.ledger = append(st.ledger, LedgerEntry{OperationID: op.ID, Revision: rev.ID, Interface: iface, OrderID: o.ID, ItemID: it.ID,
		ReplacementSKU: rev.Asked.ReplacementSKU, ClientID: c.ClientID, UserID: c.UserID, SID: c.SID, Account: c.Account, At: now})
	out := outcome{kind: outPerformed, result: result}
	if st.s.fault(FaultLoseResponse) && !op.LostOnce {
		op.LostOnce = true
		out.loseFirst = true
	}
	return out
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// randomID returns n random bytes, base64url: the ID characters of spec 8.2.
func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

package refcompany

// Reset puts the reference Company back as it was at start, so a demo can be tried again.

// Reset restores the reference Company's state as at start: the orders and the ledger, the
// operations and the approvals it remembers, every grant, code and token its authorization
// server issued (so every sign-in ends: a Personal Agent must sign in again), the Company
// Agent's conversations, the browser sessions and join codes, and the feedback reports. What
// configures the Server stays: its faults, hosts, keys, issuer mode, edits and the requests it
// recorded. Safe to call while it serves.
func (s *Server) Reset() {
	s.mu.Lock()
	s.tokens = map[string]AccessToken{}
	s.ended = map[string]bool{}
	s.feedback = nil
	s.mu.Unlock()

	op := s.ops()
	op.mu.Lock()
	op.accounts = map[string]string{}
	op.orders = seedOrders()
	op.ops = map[string]*opRecord{}
	op.byAction = map[string]string{}
	op.ledger = nil
	op.mu.Unlock()

	a := s.auth()
	a.mu.Lock()
	a.codes = map[string]*authCode{}
	a.grants = map[string]*grant{}
	a.devices = map[string]*deviceReq{}
	a.userCodes = map[string]string{}
	a.pending = map[string]*authRequest{}
	a.atInfo = map[string]tokenInfo{}
	a.mu.Unlock()

	ag := s.agent()
	ag.mu.Lock()
	ag.convs = map[string]*agentConv{}
	ag.msgs = map[string]*agentMsgRecord{}
	ag.invites = map[string]string{}
	ag.mu.Unlock()

	b := s.browser()
	b.mu.Lock()
	b.codes = map[string]*joinCode{}
	b.byCookie = map[string]string{}
	b.sessions = map[string]*webSession{}
	b.logins = map[string]string{}
	b.joins = nil
	b.exchanges = nil
	b.mu.Unlock()
}

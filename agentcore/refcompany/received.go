package refcompany

// What the reference Company received with an approval, and a mode that performs every approved
// request it accepts: tests count what a Personal Agent put on the wire, whatever the Company's
// own deduplication (Operations 7).

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// Results of a request that carried an approval (ApprovalReceived.Result).
const (
	ReceivedPerformed   = "performed"    // performed now (a ledger entry)
	ReceivedReplayed    = "replayed"     // performed earlier: the first response again (Operations 7)
	ReceivedInProgress  = "in_progress"  // 503 / tool in_progress: being performed (Operations 7)
	ReceivedNewRevision = "new_revision" // check 3 failed: a new revision, nothing performed (Operations 6)
	ReceivedRefused     = "refused"      // a business error, nothing performed
	ReceivedChallenge   = "challenge"    // the account is needed (Operations 3 "Who can approve it")
)

// ApprovalReceived is one request that carried an approval (Poppy-Approval, or the MCP _meta
// approval key, or a conversation message's approval), as the reference Company decided it.
type ApprovalReceived struct {
	OperationID, Revision string // as named by the approval
	Interface             string // InterfaceAPI, InterfaceMCP or InterfaceConversation
	Result                string // a Received constant
	// Lost: FaultLoseResponse drops this response (the request was performed). Only the API
	// drops it; the MCP tool and conversations answer as usual.
	Lost bool
}

// SetNoReplay switches off check 2 (Operations 6, 7): an approved request for an operation that
// was performed already is performed AGAIN (one more ledger entry, a new exchange) instead of
// getting the first response. It breaks at-most-once on purpose, so that a test's ledger counts
// every performing request a Personal Agent sent rather than what the Company deduplicated.
func (s *Server) SetNoReplay(on bool) {
	st := s.ops()
	st.mu.Lock()
	st.noReplay = on
	st.mu.Unlock()
}

// OnApproval calls f (nil: nothing) for each request that carries an approval, after the Company
// decided it (and performed it, if it did) and before it answers: a test can stop the caller at
// exactly that point. f runs in the request's handler, without the Company's locks.
func (s *Server) OnApproval(f func(ApprovalReceived)) {
	st := s.ops()
	st.mu.Lock()
	st.onApproval = f
	st.mu.Unlock()
}

// ApprovalsReceived returns every request that carried an approval, in the order decided.
func (s *Server) ApprovalsReceived() []ApprovalReceived {
	st := s.ops()
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]ApprovalReceived(nil), st.received...)
}

// exchange decides one exchange request (decide, ledger.go) and records it when it carried an
// approval.
func (st *opStore) exchange(c caller, iface string, ask exchangeAsk, appr *approvalRef) outcome {
	out := st.decide(c, iface, ask, appr)
	if appr == nil {
		return out
	}
	r := ApprovalReceived{OperationID: appr.OperationID, Revision: appr.Revision, Interface: iface, Lost: out.loseFirst && iface == InterfaceAPI}
	switch out.kind {
	case outPerformed:
		r.Result = ReceivedPerformed
	case outReplay:
		r.Result = ReceivedReplayed
	case outInProgress:
		r.Result = ReceivedInProgress
	case outNeedApproval:
		r.Result = ReceivedNewRevision
	case outChallenge:
		r.Result = ReceivedChallenge
	default:
		r.Result = ReceivedRefused
	}
	st.mu.Lock()
	st.received = append(st.received, r)
	f := st.onApproval
	st.mu.Unlock()
	if f != nil {
		f(r)
	}
	return out
}

// connTracker numbers the connections the Company accepts and knows which are still open, so a
// test that killed a client can wait until the Company has handled everything that client sent.
type connTracker struct {
	mu     sync.Mutex
	seq    int64
	open   map[net.Conn]int64
	closed chan struct{} // closed and replaced on every connection's end
}

func (ct *connTracker) state(c net.Conn, st http.ConnState) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.open == nil {
		ct.open, ct.closed = map[net.Conn]int64{}, make(chan struct{})
	}
	switch st {
	case http.StateNew:
		ct.seq++
		ct.open[c] = ct.seq
	case http.StateClosed, http.StateHijacked:
		delete(ct.open, c)
		close(ct.closed)
		ct.closed = make(chan struct{})
	}
}

// ConnMark is the number of connections the Company accepted so far: pass it to WaitConnsClosed.
func (s *Server) ConnMark() int64 {
	s.cn.mu.Lock()
	defer s.cn.mu.Unlock()
	return s.cn.seq
}

// WaitConnsClosed waits until every connection accepted after mark (ConnMark) has ended: after its
// client died, everything that client sent was read and decided (a request still in a socket
// buffer is read, handled, and its connection then ends).
func (s *Server) WaitConnsClosed(ctx context.Context, mark int64) error {
	for {
		s.cn.mu.Lock()
		if s.cn.open == nil {
			s.cn.open, s.cn.closed = map[net.Conn]int64{}, make(chan struct{})
		}
		busy := 0
		for _, n := range s.cn.open {
			if n > mark {
				busy++
			}
		}
		ch := s.cn.closed
		s.cn.mu.Unlock()
		if busy == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("refcompany: %d connections accepted after mark %d are still open: %w", busy, mark, ctx.Err())
		}
	}
}

package refcompany

import "strings"

// ForgetFinished drops what the reference Company keeps of finished work, so that a long-running
// test (the soak test) measures Poppydesk's memory rather than the Company's: the given orders
// with the operations on them, their ledger entries and the approvals received for them
// (ApprovalsReceived), and every closed conversation with its accepted messages and invitations.
// Work in progress is kept. It returns how many records went.
func (s *Server) ForgetFinished(orders ...string) int {
	n := 0
	st := s.ops()
	st.mu.Lock()
	gone := map[string]bool{} // operation IDs
	for _, id := range orders {
		if _, ok := st.orders[id]; ok {
			delete(st.orders, id)
			n++
		}
		for opID, op := range st.ops {
			if op.Performed != nil && strings.Contains(op.Action+"|", "|"+id+"|") {
				delete(st.byAction, op.Action)
				delete(st.ops, opID)
				gone[opID] = true
				n++
			}
		}
	}
	kept := st.ledger[:0]
	for _, e := range st.ledger {
		drop := false
		for _, id := range orders {
			drop = drop || e.OrderID == id
		}
		if drop {
			n++
			continue
		}
		kept = append(kept, e)
	}
	clear(st.ledger[len(kept):])
	st.ledger = kept
	received := st.received[:0]
	for _, r := range st.received {
		if gone[r.OperationID] {
			n++
			continue
		}
		received = append(received, r)
	}
	clear(st.received[len(received):])
	st.received = received
	st.mu.Unlock()

	a := s.agent()
	a.mu.Lock()
	for id, c := range a.convs {
		if c.status != "closed" || c.running {
			continue
		}
		delete(a.convs, id)
		n++
		for k, m := range a.msgs {
			if m.conv == id {
				delete(a.msgs, k)
			}
		}
		for k, v := range a.invites {
			if v == id || strings.HasPrefix(k, id+"|") {
				delete(a.invites, k)
			}
		}
	}
	a.mu.Unlock()
	return n
}

package refcompany

import "strconv"

// AddOrder adds a delivered order with one item per SKU (items orderID+"_item0", "_item1", ...) to
// account (DefaultAccount when ""). Tests that need many exchangeable items use it, e.g. the
// approvals kill test, which performs one exchange per operation. An existing order is replaced.
func (s *Server) AddOrder(account, orderID string, skus ...string) {
	if account == "" {
		account = DefaultAccount
	}
	o := &order{ID: orderID, Account: account, Status: "delivered"}
	for i, sku := range skus {
		o.Items = append(o.Items, &orderItem{ID: orderID + "_item" + strconv.Itoa(i), SKU: sku})
	}
	st := s.ops()
	st.mu.Lock()
	st.orders[orderID] = o
	st.mu.Unlock()
}

package vault

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/store"
)

// TestApprovalPages: pages of approvals, newest first, filtered by state, Company and operation
// and continued after the last of the previous page, the same from the vault and from the
// in-memory store; each with its revisions.
func TestApprovalPages(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemoryApprovals()
	stores := map[string]interface {
		store.Approvals
		store.ApprovalPages
	}{"vault": openTest(t, StateOptions{}), "memory": mem}
	states := []string{"pending", "succeeded", "declined", "succeeded", "outcome_unknown"}
	for name, st := range stores {
		for i := range 25 {
			// Two approvals share each creation time, so the ID breaks the tie.
			a := store.Approval{ID: fmt.Sprintf("ap-%02d", i), Company: "https://shop.example", Interface: "api",
				Request: json.RawMessage(`{}`), State: states[i%len(states)], Created: t0.Add(time.Duration(i/2) * time.Minute)}
			for r := 1; r <= 1+i%2; r++ {
				if r == 1 {
					// The queue's record: the operation's operation_id is ap-NN's NN%4; "op-1" also
					// appears as other fields' values.
					op := fmt.Sprintf(`{"operation":{"r":1,"operation_id":"op-%d","note":"op-1"},"request":{"operation_id":"op-1"}}`, i%4)
					must(t, st.CreateApproval(ctx, a, store.Revision{Revision: 1, Operation: json.RawMessage(op), Received: t0}))
				} else {
					must(t, st.AddRevision(ctx, a.ID, store.Revision{Revision: 2, Operation: json.RawMessage(`{"operation":{"r":2,"operation_id":"op-later"},"request":{}}`), Received: t0}, a.State))
				}
			}
			// ap-NN gets NN%3 decisions: "note", then "approve", each a step to the same state.
			for k := range i % 3 {
				d := store.Decision{Revision: 1 + i%2, To: a.State, Decision: []string{"note", "approve"}[k], At: t0.Add(time.Duration(k) * time.Second)}
				must(t, st.TransitionApproval(ctx, a.ID, a.State, d))
			}
		}
		t.Run(name+"/decisions of a page", func(t *testing.T) {
			page := []string{"ap-00", "ap-01", "ap-02", "ap-05", "ap-nope"}
			tests := []struct {
				kinds []string
				want  map[string][]string // ID: its decisions, in order
			}{
				{nil, map[string][]string{"ap-01": {"note"}, "ap-02": {"note", "approve"}, "ap-05": {"note", "approve"}}},
				{[]string{"approve"}, map[string][]string{"ap-02": {"approve"}, "ap-05": {"approve"}}},
				{[]string{"decline"}, map[string][]string{}},
			}
			for _, tc := range tests {
				got, err := st.DecisionsOf(ctx, page, tc.kinds...)
				if err != nil {
					t.Fatal(err)
				}
				names := map[string][]string{}
				for id, decs := range got {
					for _, d := range decs {
						if d.ApprovalID != id || !slices.Contains(page, id) {
							t.Fatalf("DecisionsOf(%v): %+v under %s", tc.kinds, d, id)
						}
						names[id] = append(names[id], d.Decision)
					}
				}
				if fmt.Sprint(names) != fmt.Sprint(tc.want) {
					t.Errorf("DecisionsOf(%v) = %v, want %v", tc.kinds, names, tc.want)
				}
			}
		})
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				name string
				q    store.ApprovalQuery
				want []string // every ID over all pages, in order
			}{
				{"all", store.ApprovalQuery{Limit: 7}, ids(24, 0, nil)},
				{"pending", store.ApprovalQuery{States: []string{"pending"}, Limit: 2}, ids(24, 0, func(i int) bool { return i%5 == 0 })},
				{"decided", store.ApprovalQuery{NotStates: []string{"pending", "outcome_unknown"}, Limit: 4}, ids(24, 0, func(i int) bool { return i%5 != 0 && i%5 != 4 })},
				{"an operation's", store.ApprovalQuery{OperationID: "op-1", Limit: 2}, ids(24, 0, func(i int) bool { return i%4 == 1 })},
				{"an operation's by a later revision", store.ApprovalQuery{OperationID: "op-later", Limit: 5}, ids(24, 0, func(i int) bool { return i%2 == 1 })},
				{"an operation's succeeded at its Company", store.ApprovalQuery{States: []string{"succeeded"}, Company: "https://shop.example", OperationID: "op-3", Limit: 50},
					ids(24, 0, func(i int) bool { return i%4 == 3 && (i%5 == 1 || i%5 == 3) })},
				{"another Company's", store.ApprovalQuery{Company: "https://other.example", OperationID: "op-1", Limit: 5}, nil},
				{"no such operation", store.ApprovalQuery{OperationID: "op-9", Limit: 5}, nil},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					var got []string
					q := tc.q
					for range 30 {
						page, err := st.ListApprovalsPage(ctx, q)
						if err != nil {
							t.Fatal(err)
						}
						if len(page) > q.Limit {
							t.Fatalf("a page of %d, limit %d", len(page), q.Limit)
						}
						for _, a := range page {
							n := 1
							if strings.HasSuffix(a.ID, "1") || strings.HasSuffix(a.ID, "3") || strings.HasSuffix(a.ID, "5") || strings.HasSuffix(a.ID, "7") || strings.HasSuffix(a.ID, "9") {
								n = 2
							}
							if len(a.Revisions) != n || a.Revisions[n-1].Revision != n {
								t.Fatalf("%s has revisions %+v", a.ID, a.Revisions)
							}
							got = append(got, a.ID)
						}
						if len(page) < q.Limit {
							break
						}
						last := page[len(page)-1]
						q.BeforeCreated, q.BeforeID = last.Created, last.ID
					}
					if !slices.Equal(got, tc.want) {
						t.Fatalf("pages = %v\nwant    %v", got, tc.want)
					}
				})
			}
		})
	}
}

// TestCompanyPages: the Companies screen's pages, in name order without case (then identifier:
// two Companies may share a name), each after the last of the previous page, every Company
// once.
func TestCompanyPages(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	names := []string{"beta", "Alpha", "gamma", "alpha", "", "Beta"}
	agents := []string{"", "https://c1.example/agent", "", "https://c3.example/agent", "", ""}
	for i, n := range names {
		must(t, s.PutCompany(ctx, store.Company{Identifier: fmt.Sprintf("https://c%d.example", i), Domain: fmt.Sprintf("c%d.example", i), Name: n,
			Agent: agents[i], Document: json.RawMessage(`{}`), FetchedAt: t0}))
	}
	tests := []struct {
		talk bool
		want []string
	}{
		{false, []string{"https://c4.example", "https://c1.example", "https://c3.example", "https://c0.example", "https://c5.example", "https://c2.example"}},
		// With a Company Agent, or stored before the columns (no name): its document says.
		{true, []string{"https://c4.example", "https://c1.example", "https://c3.example"}},
	}
	for _, tc := range tests {
		for _, limit := range []int{1, 2, 4, 10} {
			pageThrough(t, s, CompanyQuery{Limit: limit, Talk: tc.talk}, tc.want)
		}
	}
	if n, err := s.CountCompanies(ctx); err != nil || n != len(names) {
		t.Errorf("CountCompanies = %d, %v", n, err)
	}
}

// pageThrough reads every page of q and checks the identifiers listed, in order.
func pageThrough(t *testing.T, s *State, q CompanyQuery, want []string) {
	t.Helper()
	var got []string
	for range 10 {
		page, err := s.ListCompanyRefs(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > q.Limit {
			t.Fatalf("a page of %d, limit %d", len(page), q.Limit)
		}
		for _, r := range page {
			got = append(got, r.Identifier)
		}
		if len(page) < q.Limit {
			break
		}
		q.AfterName, q.AfterID = page[len(page)-1].Name, page[len(page)-1].Identifier
	}
	if !slices.Equal(got, want) {
		t.Errorf("limit %d, talk %v: pages = %v\nwant %v", q.Limit, q.Talk, got, want)
	}
}

// ids lists ap-HI down to ap-LO that keep passes (nil: all).
func ids(hi, lo int, keep func(int) bool) []string {
	var out []string
	for i := hi; i >= lo; i-- {
		if keep == nil || keep(i) {
			out = append(out, fmt.Sprintf("ap-%02d", i))
		}
	}
	return out
}

// TestListQueriesUseIndexes: the window's list queries are range scans of an index (migration
// 0005), never a scan of a table or a sort of all its rows, so they stay fast over long
// histories.
func TestListQueriesUseIndexes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, StateOptions{})
	tests := []struct {
		name, query string
		args        []any
		index       string
	}{
		{"decided approvals, first page", `SELECT id FROM approvals WHERE state NOT IN (?, ?) ORDER BY created_at DESC, id DESC LIMIT 51`, []any{"pending", "sending"}, "approvals_created"},
		{"decided approvals, next page", `SELECT id FROM approvals WHERE state NOT IN (?) AND (created_at < ? OR created_at = ? AND id < ?) ORDER BY created_at DESC, id DESC LIMIT 51`, []any{"pending", 5, 5, "x"}, "approvals_created"},
		{"pending approvals", `SELECT id FROM approvals WHERE state IN (?) ORDER BY created_at DESC, id DESC LIMIT 101`, []any{"pending"}, "approvals_state_created"},
		{"the decisions of a page", `SELECT seq FROM approval_decisions WHERE approval_id IN (?, ?) AND decision IN (?, ?) ORDER BY seq`, []any{"a", "b", "approve", "decline"}, "approval_decisions_approval"},
		{"the names of a page's Companies", `SELECT identifier, name, domain FROM companies WHERE identifier IN (?, ?)`, []any{"a", "b"}, "sqlite_autoindex_companies_1"},
		{"Companies by name, first page", `SELECT identifier, name, domain, agent FROM companies INDEXED BY companies_name ORDER BY name COLLATE NOCASE, identifier LIMIT 31`, nil, "companies_name"},
		{"Companies by name, next page", `SELECT identifier, name, domain, agent FROM companies INDEXED BY companies_name WHERE (name COLLATE NOCASE > ? OR name COLLATE NOCASE = ? AND identifier > ?) AND (agent != '' OR name = '') ORDER BY name COLLATE NOCASE, identifier LIMIT 31`, []any{"b", "b", "x"}, "companies_name"},
		{"a Company's conversations", `SELECT id FROM conversations WHERE company = ? ORDER BY updated_at DESC, id`, []any{"c"}, "conversations_updated"},
		{"the exchange log's size", `SELECT COALESCE(SUM(size), 0) FROM exchanges INDEXED BY exchanges_size`, nil, "exchanges_size"},
		{"aged exchanges", `SELECT EXISTS (SELECT 1 FROM exchanges WHERE at < ?)`, []any{5}, "exchanges_at"},
		{"an operation's finished approvals", `SELECT id FROM approvals INDEXED BY sqlite_autoindex_approvals_1 WHERE state IN (?, ?) AND company = ? AND id IN (SELECT approval_id FROM approval_revisions WHERE json_extract(operation, '$.operation.operation_id') = ?) ORDER BY created_at DESC, id DESC LIMIT 101`,
			[]any{"succeeded", "failed", "c", "op"}, "approval_revisions_operation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+tc.query, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				must(t, rows.Scan(&id, &parent, &unused, &detail))
				plan = append(plan, detail)
			}
			all := strings.Join(plan, "; ")
			if !strings.Contains(all, "INDEX "+tc.index) || strings.Contains(all, "SCAN approvals ") && !strings.Contains(all, "USING") {
				t.Fatalf("plan %q does not use the index %s", all, tc.index)
			}
			// The Companies screen reads only the index, never a document.
			if tc.index == "companies_name" && !strings.Contains(all, "COVERING INDEX companies_name") {
				t.Fatalf("plan %q reads the table", all)
			}
			// The decisions of a page are sorted, but only the page's few dozen rows are.
			// An operation's approvals are read by their IDs, not by a scan of an index.
			if tc.index == "approval_revisions_operation" && !strings.Contains(all, "SEARCH approvals USING INDEX sqlite_autoindex_approvals_1 (id=?)") {
				t.Fatalf("plan %q does not read the operation's approvals by ID", all)
			}
			// So are an operation's approvals: a handful, found by the operation's index.
			if strings.Contains(tc.query, "ORDER BY") && strings.Contains(all, "TEMP B-TREE FOR ORDER BY") && tc.name != "the decisions of a page" && tc.name != "an operation's finished approvals" {
				t.Fatalf("plan %q sorts the rows", all)
			}
		})
	}
}

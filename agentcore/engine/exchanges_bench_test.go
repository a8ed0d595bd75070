package engine_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/poppydesk/poppydesk/agentcore/engine"
	"github.com/poppydesk/poppydesk/agentcore/poppytest"
	"github.com/poppydesk/poppydesk/agentcore/refcompany"
	"github.com/poppydesk/poppydesk/agentcore/transport"
	"github.com/poppydesk/poppydesk/internal/benchratio"
	"github.com/poppydesk/poppydesk/vault"
)

// writerBatch is how many exchanges one operation of BenchmarkExchangeWriter writes: one batch.
const writerBatch = 64

// BenchmarkExchangeWriter measures the CPU the exchange log's writer spends per batch of
// writerBatch exchanges as the product reports them (signed-out requests and signed-in
// requests with DPoP and a per-service token, alternately, taken from a real engine with its
// Inspector's raw material): decoding the Inspector's details, encoding them and the headers,
// and storing the batch in the state database on disk in one transaction. Its floor
// (vs=insert) is storing the same rows, every column already encoded, with one plain prepared
// statement in one transaction into an identical database (same schema, same pragmas): what
// SQLite costs whatever the writer does. cpu-ns/op over writerBatch is the writer's CPU per
// exchange.
func BenchmarkExchangeWriter(b *testing.B) {
	ctx := context.Background()
	var mu sync.Mutex
	var seen []transport.Exchange
	clk := &refcompany.Clock{}
	s := poppytest.Start(b, refcompany.Options{Now: clk.Now})
	s.SetDPoP(true)
	eng := poppytest.NewEngine(b, s, poppytest.EngineOptions{Clock: clk, Transport: func(c *transport.Config) {
		c.Observer = func(ex transport.Exchange) { mu.Lock(); seen = append(seen, ex); mu.Unlock() }
	}})
	co := eng.Discover(b, s)
	eng.SignIn(b, s, "bench", "orders:read")
	var clients []*engine.Client
	paths := []string{"/api/products", "/api/orders"}
	for _, account := range []string{"", "bench"} {
		c, err := eng.Engine.Client(ctx, co.Identifier, account)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := get(b, s, c, paths[len(clients)]); err != nil { // warm: the Session, the token
			b.Fatal(err)
		}
		clients = append(clients, c)
	}
	mu.Lock()
	seen = nil
	mu.Unlock()
	for i := range writerBatch {
		if _, err := get(b, s, clients[i%2], paths[i%2]); err != nil {
			b.Fatal(err)
		}
	}
	s.ResetRequests()
	mu.Lock()
	exs := seen
	mu.Unlock()
	if len(exs) != writerBatch {
		b.Fatalf("%d exchanges reported, want %d", len(exs), writerBatch)
	}

	dir := b.TempDir()
	st, err := vault.OpenState(ctx, filepath.Join(dir, "writer.sqlite"), vault.StateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	w := engine.NewExchangeWriter(st, "shop")

	// The floor's database: created by the vault (the same migrations), then written through a
	// plain connection with the vault's writer pragmas.
	floorPath := filepath.Join(dir, "floor.sqlite")
	fst, err := vault.OpenState(ctx, floorPath, vault.StateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	fst.Close()
	db, err := sql.Open("sqlite", "file:"+floorPath+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=temp_store(MEMORY)"+
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=secure_delete(1)&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	at := time.Now()
	rows := make([][]any, len(exs))
	for i, ex := range exs {
		e := w.Record(ex, at)
		reqH, _ := json.Marshal(e.RequestHeaders)
		respH, _ := json.Marshal(e.ResponseHeaders)
		rows[i] = []any{e.At.UnixNano(), e.Company, e.Direction, e.Method, e.URL, e.Status, string(reqH),
			e.RequestBody, string(respH), e.ResponseBody, int64(e.Duration), int64(len(reqH) + len(respH) + len(e.Details)), string(e.Details)}
		if e.RequestBody == nil {
			rows[i][7] = []byte{}
		}
		if e.ResponseBody == nil {
			rows[i][9] = []byte{}
		}
	}
	insert := func(b *testing.B) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO exchanges (at, company, direction, method, url, status,
			request_headers, request_body, response_headers, response_body, duration_ns, size, details)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rows {
			if _, err := stmt.ExecContext(ctx, r...); err != nil {
				b.Fatal(err)
			}
		}
		stmt.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	benchratio.RunCPU(b, "writer", "insert",
		func(b *testing.B) { w.Write(exs, at) },
		insert)
}

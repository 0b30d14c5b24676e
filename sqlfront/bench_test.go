package sqlfront_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/sqlfront"
	"github.com/fencegw/fencegw/tokens"
)

// BenchmarkFencedTransaction measures one fenced transaction, BEGIN, the
// fence, a debit, COMMIT, through the SQL front and direct to PostgreSQL
// on the same database, at 1, 16 and 64 clients, each client a
// connection of its own writing an account of its own (no two clients
// contend for a fence). Direct, the transaction advances the fence with
// fencegw.fence as the gateway's role; through the front, SET LOCAL
// fencegw.tokens does, and the COMMIT asks etcd who holds the account.
// ns/op is per transaction, all clients together: front/direct of
// transactions per second is direct's ns/op over the front's
// (BENCHMARKS.md).
//
//	go test ./sqlfront -run XXX -bench FencedTransaction -benchtime 5s
func BenchmarkFencedTransaction(b *testing.B) {
	f := newFront(b, func(c *sqlfront.Config) { c.MaxConnections, c.MaxClientConnections = 200, 100 })
	const most = 64
	f.admin("BEGIN; SELECT fencegw.bypass('a benchmark: the debits never run out'); UPDATE demo.accounts SET balance_cents = 1000000000000; COMMIT")
	toks := make([]string, most)
	for i := range most {
		toks[i] = f.lease(billing, fmt.Sprintf("account/acct-%d", i+1), 3600, 0).Token
	}
	for _, clients := range []int{1, 16, 64} {
		for _, path := range []string{"direct", "front"} {
			b.Run(fmt.Sprintf("clients=%d/%s", clients, path), func(b *testing.B) {
				conns := make([]*pgx.Conn, clients)
				for i := range conns {
					url := f.url(billing)
					if path == "direct" {
						url = f.gw.DatabaseURL
					}
					c, err := pgx.Connect(context.Background(), url)
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close(context.Background())
					conns[i] = c
				}
				next := make(chan struct{}, b.N)
				for range b.N {
					next <- struct{}{}
				}
				close(next)
				b.ResetTimer()
				var wg sync.WaitGroup
				for i, c := range conns {
					account, tok := fmt.Sprintf("acct-%d", i+1), toks[i]
					wg.Go(func() {
						for range next {
							if err := fencedDebit(c, path, account, tok); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// fencedDebit is the transaction measured, on either path.
func fencedDebit(c *pgx.Conn, path, account, token string) error {
	ctx := context.Background()
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		var err error
		if path == "front" {
			_, err = tx.Exec(ctx, "SELECT set_config('fencegw.tokens', $1, true)", "account/"+account+"="+token)
		} else {
			t, perr := tokens.Parse(token)
			if perr != nil {
				return perr
			}
			_, err = tx.Exec(ctx, "SELECT fencegw.fence($1, $2, $3, false)", "account/"+account, t.Epoch, t.Revision)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE demo.accounts SET balance_cents = balance_cents - 1 WHERE id = $1", account)
		return err
	})
}

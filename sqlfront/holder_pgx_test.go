package sqlfront_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/tokens"
)

// pgxHolder is holder A on pgx, in the test's own process: frozen, it
// simply sends nothing, as a paused process would.
type pgxHolder struct {
	f  *front
	tx pgx.Tx
}

func (h *pgxHolder) write(account, token string) {
	h.f.t.Helper()
	ctx := context.Background()
	tx, err := h.f.connect(billing).Begin(ctx)
	if err != nil {
		h.f.t.Fatal(err)
	}
	for _, sql := range debitSQL(account, token) {
		if _, err := tx.Exec(ctx, sql); err != nil {
			h.f.t.Fatalf("A: %s: %v", sql, err)
		}
	}
	h.tx = tx
}

func (h *pgxHolder) freeze() {}
func (h *pgxHolder) thaw()   {}

func (h *pgxHolder) commit() string { return sqlState(h.tx.Commit(context.Background())) }

func mustToken(s string) tokens.Token {
	tok, err := tokens.Parse(s)
	if err != nil {
		panic(fmt.Sprintf("a token the gateway granted: %v", err))
	}
	return tok
}

// balanceOf reads the balance out of a state.
func balanceOf(t *testing.T, state string) int64 {
	t.Helper()
	s, _, _ := strings.Cut(strings.TrimPrefix(state, "balance "), ",")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("state %q: %v", state, err)
	}
	return n
}

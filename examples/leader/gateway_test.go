package main

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testgw"
	"github.com/fencegw/fencegw/tokens"
)

// startGateway serves the example's policy on a fresh database, with the
// guard on leader.decisions: nothing but a fenced lead writes there.
// config, if set, changes the gateway's (the control turns the fence off).
func startGateway(t *testing.T, config func(*gateway.Config)) *testgw.Gateway {
	return testgw.Start(t, testgw.Options{
		Policy: "policy.yaml", Migrations: "migrations", MigrationsTable: "leader_schema_migrations", Guard: true,
		Config: config,
	})
}

// rejected reports whether the gateway recorded, in fencegw.rejections, a
// write to the group refused as stale with token.
func rejected(t *testing.T, gw *testgw.Gateway, group, token string) bool {
	t.Helper()
	var n int
	err := gw.Pool.QueryRow(t.Context(), `SELECT count(*) FROM fencegw.rejections
		WHERE resource = $1 AND operation = 'lead' AND reason = 'stale-token' AND presented = $2`, "leader/"+group, token).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// decision is a row of leader.decisions.
type decision struct {
	id    int64
	who   string
	token tokens.Token
	n     int64
}

// decisions reads the group's rows in commit order.
func decisions(t *testing.T, gw *testgw.Gateway, group string) []decision {
	t.Helper()
	rows, err := gw.Pool.Query(t.Context(),
		"SELECT id, who, epoch, revision, n FROM leader.decisions WHERE group_name = $1 ORDER BY id", group)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []decision
	for rows.Next() {
		var d decision
		if err := rows.Scan(&d.id, &d.who, &d.token.Epoch, &d.token.Revision, &d.n); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// awaitWrites waits until who has written n rows of the group with
// token, and returns the first of them.
func awaitWrites(t *testing.T, gw *testgw.Gateway, group, who string, token tokens.Token, n int) decision {
	t.Helper()
	var first decision
	if !testenv.WaitFor(20*time.Second, func() bool {
		var got []decision
		for _, d := range decisions(t, gw, group) {
			if d.who == who && d.token == token {
				got = append(got, d)
			}
		}
		if len(got) < n {
			return false
		}
		first = got[0]
		return true
	}) {
		t.Fatalf("%s never wrote %d times with token %s", who, n, token)
	}
	return first
}

// checkHistory: in commit order the tokens never go backwards, and every
// token wrote as one candidate only.
func checkHistory(t *testing.T, ds []decision) {
	t.Helper()
	owner := map[tokens.Token]string{}
	for i, d := range ds {
		if i > 0 && d.token.Compare(ds[i-1].token) < 0 {
			t.Errorf("row %d (%s, token %s) committed after row %d (%s, token %s): the tokens went backwards",
				d.id, d.who, d.token, ds[i-1].id, ds[i-1].who, ds[i-1].token)
		}
		if w, ok := owner[d.token]; ok && w != d.who {
			t.Errorf("token %s wrote as %s and as %s", d.token, w, d.who)
		}
		owner[d.token] = d.who
	}
}

// awaitLeader waits until one of the candidates holds the group's lock
// with all the others waiting in line, and returns the holder, its token
// and its process.
func awaitLeader(t *testing.T, c *client.Client, group string, candidates ...*process) (client.Contender, tokens.Token, *process) {
	t.Helper()
	var holder client.Contender
	var leader *process
	if !testenv.WaitFor(20*time.Second, func() bool {
		st, err := c.Observe(t.Context(), "leader/"+group)
		if err != nil || st.Holder == nil || len(st.Waiters) != len(candidates)-1 {
			return false
		}
		seen := map[string]bool{st.Holder.Value: true}
		for _, w := range st.Waiters {
			seen[w.Value] = true
		}
		leader = nil
		for _, p := range candidates {
			if !seen[p.name] {
				return false
			}
			if p.name == st.Holder.Value {
				leader = p
			}
		}
		holder = *st.Holder
		return leader != nil
	}) {
		t.Fatalf("none of %d candidates leads %s with the others waiting", len(candidates), group)
	}
	token, err := tokens.Parse(holder.Token)
	if err != nil {
		t.Fatal(err)
	}
	return holder, token, leader
}

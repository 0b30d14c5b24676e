package sqlfront_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// TestAnswersGoWhenOwed: the front writes to the client at the end of
// what a Sync is owed, and at a Flush, as PostgreSQL does, however much
// more the client has sent and not asked answers for yet. A client that
// sent a Sync, then the start of its next statement, and waits for its
// ReadyForQuery gets it; one that then sends a Flush gets what is
// answered so far.
func TestAnswersGoWhenOwed(t *testing.T) {
	f := newFront(t)
	r := f.login(billing)
	if err := r.conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	r.send(&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{},
		&pgproto3.Parse{Name: "next", Query: "SELECT 2"})
	var got []string
	for {
		m := r.receive()
		got = append(got, typeName(m))
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if want := "ParseComplete BindComplete DataRow CommandComplete ReadyForQuery"; strings.Join(got, " ") != want {
		t.Fatalf("the answers to the first Sync: %s, want %s", strings.Join(got, " "), want)
	}
	r.send(&pgproto3.Flush{})
	if m := r.receive(); typeName(m) != "ParseComplete" {
		t.Fatalf("after a Flush: %s, want the next statement's ParseComplete", typeName(m))
	}
	r.send(&pgproto3.Sync{})
	if m := r.receive(); typeName(m) != "ReadyForQuery" {
		t.Fatalf("after the second Sync: %s, want ReadyForQuery", typeName(m))
	}
}

func typeName(m pgproto3.BackendMessage) string {
	switch m := m.(type) {
	case *pgproto3.ParseComplete:
		return "ParseComplete"
	case *pgproto3.BindComplete:
		return "BindComplete"
	case *pgproto3.DataRow:
		return "DataRow"
	case *pgproto3.CommandComplete:
		return "CommandComplete"
	case *pgproto3.ReadyForQuery:
		return "ReadyForQuery"
	case *pgproto3.ErrorResponse:
		return "ErrorResponse: " + m.Message
	}
	return "another message"
}

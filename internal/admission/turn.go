package admission

import "context"

// Turn is one piece of work's turn at a Gate, which it may give back
// while it waits for something else (the gateway's write while it waits
// on etcd; the SQL front's session while it waits for its client outside
// a transaction) and take again. One goroutine uses it.
type Turn struct {
	gate   *Gate
	client string
	held   bool
}

// Turn returns client's turn at g, not taken yet.
func (g *Gate) Turn(client string) *Turn { return &Turn{gate: g, client: client} }

// Held reports whether the turn is taken.
func (t *Turn) Held() bool { return t.held }

// Take waits for the turn, as Enter does, unless it is held.
func (t *Turn) Take(ctx context.Context) error {
	if t.held {
		return nil
	}
	if err := t.gate.Enter(ctx, t.client); err != nil {
		return err
	}
	t.held = true
	return nil
}

// Release gives the turn back, if held.
func (t *Turn) Release() {
	if t.held {
		t.held = false
		t.gate.Leave(t.client)
	}
}

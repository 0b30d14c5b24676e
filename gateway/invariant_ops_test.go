package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/fencegw/fencegw/gateway"
)

// invOp is one operation of the randomized test: a write or a batch, sent
// once or several times (with its Idempotency-Key, to either replica), and
// every answer it got.
type invOp struct {
	id     string
	key    string // "" unkeyed
	writes []invWrite
	batch  bool
	// trespass: a tag whose deferred work writes another account's row,
	// which the guard must refuse whatever transaction it runs in.
	trespass bool

	mu       sync.Mutex
	attempts []invAttempt
}

// invWrite is one write of an operation.
type invWrite struct {
	operation string
	args      map[string]any
	// tokens by role ("" for an operation of one resource)
	tokens map[string]string
	// applied names the inv.applied rows it makes, each of resource
	applied   []string
	resources []string
}

// invAttempt is one answer.
type invAttempt struct {
	via      string // the replica, or "resolve" for the final retries
	status   int
	kind     string
	outcome  string
	current  string // a stale-token refusal's current token
	resource string // and its resource
	body     []byte
	replayed bool
	answered time.Time
}

// final reports whether a is an answer the client may act on as final.
func (a invAttempt) final() bool {
	return a.status == http.StatusOK || (a.status >= 400 && a.status < 500)
}

// settled reports whether op got a final answer.
func (op *invOp) settled() bool {
	op.mu.Lock()
	defer op.mu.Unlock()
	return slices.ContainsFunc(op.attempts, invAttempt.final)
}

func (op *invOp) record(a invAttempt) {
	op.mu.Lock()
	op.attempts = append(op.attempts, a)
	op.mu.Unlock()
}

var invAccounts, invSlots = []string{"a1", "a2", "a3", "a4"}, []string{"s1", "s2"}

// runOp makes one random operation and sends it: to one replica, or keyed
// to both at once, or keyed again after an answer that settled nothing.
func (r *invariantRun) runOp(rng *rand.Rand, id string) {
	op := &invOp{id: id}
	if rng.IntN(2) == 0 {
		op.key = "k-" + id
	}
	switch n := rng.IntN(20); {
	case n < 9:
		op.writes = []invWrite{r.post(rng, id)}
	case n < 12:
		op.writes = []invWrite{r.put(rng, id)}
	case n < 14:
		op.writes = []invWrite{r.move(rng, id)}
	case n < 17:
		w, trespass := r.tag(rng, id)
		op.writes, op.trespass = []invWrite{w}, trespass
	default:
		op.batch = true
		used := map[string]bool{}
		for i := range 2 + rng.IntN(2) {
			sub := fmt.Sprintf("%s/%d", id, i)
			w := r.post(rng, sub)
			if rng.IntN(3) == 0 {
				w = r.put(rng, sub)
			}
			if used[w.resources[0]] {
				continue // one resource, one write: the batch's rule for tokens is not what this tests
			}
			used[w.resources[0]] = true
			op.writes = append(op.writes, w)
		}
	}
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()

	first := rng.IntN(2)
	switch {
	case op.key != "" && rng.IntN(3) == 0:
		// A retry racing its first attempt, on the other replica.
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() { r.send(op, r.replicas[(first+i)%2], fmt.Sprint("replica ", (first+i)%2)) })
		}
		wg.Wait()
	default:
		r.send(op, r.replicas[first], fmt.Sprint("replica ", first))
		for try := 1; op.key != "" && try < 3 && !op.settled(); try++ {
			r.send(op, r.replicas[(first+try)%2], fmt.Sprint("replica ", (first+try)%2))
		}
	}
}

// amount is a post's: small credits and debits around the balances, so
// that whether a debit overdraws depends on what ran before it; now and
// then one that injects a failure, or one past the range.
func amount(rng *rand.Rand) int {
	switch n := rng.IntN(40); {
	case n == 0:
		return 13
	case n == 1:
		return 17
	case n == 2:
		return 1500000
	}
	a := 1 + rng.IntN(400)
	if rng.IntN(2) == 0 {
		return -a
	}
	return a
}

func (r *invariantRun) post(rng *rand.Rand, id string) invWrite {
	account := invAccounts[rng.IntN(len(invAccounts))]
	resource := "account/" + account
	return invWrite{operation: "post", args: map[string]any{"op": id, "account": account, "amount": amount(rng)},
		tokens: map[string]string{"": r.tokens.pick(rng, resource)}, applied: []string{id}, resources: []string{resource}}
}

func (r *invariantRun) put(rng *rand.Rand, id string) invWrite {
	slot := invSlots[rng.IntN(len(invSlots))]
	resource := "slot/" + slot
	a := rng.IntN(200) - 120 // often below zero: the CHECK refuses it
	return invWrite{operation: "put", args: map[string]any{"op": id, "slot": slot, "amount": a},
		tokens: map[string]string{"": r.tokens.pick(rng, resource)}, applied: []string{id}, resources: []string{resource}}
}

func (r *invariantRun) move(rng *rand.Rand, id string) invWrite {
	i := rng.IntN(len(invAccounts))
	j := (i + 1 + rng.IntN(len(invAccounts)-1)) % len(invAccounts)
	from, to := "account/"+invAccounts[i], "account/"+invAccounts[j]
	return invWrite{operation: "move", args: map[string]any{"op": id, "from": invAccounts[i], "to": invAccounts[j], "amount": 1 + rng.IntN(300)},
		tokens:  map[string]string{"from": r.tokens.pick(rng, from), "to": r.tokens.pick(rng, to)},
		applied: []string{id + ":from", id + ":to"}, resources: []string{from, to}}
}

func (r *invariantRun) tag(rng *rand.Rand, id string) (invWrite, bool) {
	account := invAccounts[rng.IntN(len(invAccounts))]
	target := account
	if rng.IntN(3) == 0 {
		target = invAccounts[rng.IntN(len(invAccounts))]
	}
	resource := "account/" + account
	return invWrite{operation: "tag", args: map[string]any{"op": id, "account": account, "target": target},
		tokens: map[string]string{"": r.tokens.pick(rng, resource)}, applied: []string{id}, resources: []string{resource}}, target != account
}

// invClient gives up on an answer long after any the gateway may give
// (its write timeout, a lock wait): a hang is a failure, not a wait.
var invClient = &http.Client{Timeout: 2 * time.Minute}

// send sends op once to replica h and records the answer.
func (r *invariantRun) send(op *invOp, h *harness, via string) {
	req := r.request(op, h)
	resp, err := invClient.Do(req)
	if err != nil {
		r.t.Errorf("%s via %s: %v", op.id, via, err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Errorf("%s via %s: reading the answer: %v", op.id, via, err)
		return
	}
	a := invAttempt{via: via, status: resp.StatusCode, body: body, replayed: resp.Header.Get(gateway.ReplayedHeader) == "true", answered: time.Now()}
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		var p gateway.Problem
		if err := json.Unmarshal(body, &p); err != nil {
			r.t.Errorf("%s via %s: a problem that is not JSON: %s", op.id, via, body)
		}
		a.kind, a.outcome, a.current, a.resource = p.Kind(), p.Outcome, p.CurrentToken, p.Resource
	}
	op.record(a)
}

// request builds op's HTTP request to h.
func (r *invariantRun) request(op *invOp, h *harness) *http.Request {
	var (
		path string
		body []byte
		hdr  = http.Header{"Content-Type": {"application/json"}}
	)
	if op.batch {
		type write struct {
			Operation string         `json:"operation"`
			Args      map[string]any `json:"args"`
			Token     string         `json:"token"`
		}
		var writes []write
		for _, w := range op.writes {
			writes = append(writes, write{w.operation, w.args, w.tokens[""]})
		}
		path = "/v1/batch"
		body, _ = json.Marshal(map[string]any{"writes": writes})
	} else {
		w := op.writes[0]
		path = "/v1/ops/" + w.operation
		body, _ = json.Marshal(w.args)
		if tok, single := w.tokens[""]; single {
			hdr.Set(gateway.TokenHeader, tok)
		} else {
			hdr.Set(gateway.TokenHeader, fmt.Sprintf("from=%q, to=%q", w.tokens["from"], w.tokens["to"]))
		}
	}
	if op.key != "" {
		hdr.Set(gateway.IdempotencyHeader, op.key)
	}
	req, err := http.NewRequest(http.MethodPost, h.base+path, bytes.NewReader(body))
	if err != nil {
		panic(err) // a URL and method this test built
	}
	req.Header = hdr
	return req
}

// tokenBook hands out the tokens of each resource's leases, taken in turn
// as the run goes: the newest (fresh, or equal to the fence), an older
// one (stale), or one taken just now (ahead of every write).
type tokenBook struct {
	h      *harness
	mu     sync.Mutex
	books  map[string]*resourceTokens
	failed func(format string, args ...any)
}

// resourceTokens are one resource's leases, oldest first; the last is
// held, the others were released.
type resourceTokens struct {
	mu     sync.Mutex
	leases []lease
}

func newTokenBook(h *harness) *tokenBook {
	return &tokenBook{h: h, books: map[string]*resourceTokens{}, failed: h.t.Errorf}
}

func (b *tokenBook) pick(rng *rand.Rand, resource string) string {
	b.mu.Lock()
	rt := b.books[resource]
	if rt == nil {
		rt = &resourceTokens{}
		b.books[resource] = rt
	}
	b.mu.Unlock()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch n := rng.IntN(10); {
	case len(rt.leases) == 0 || n < 2:
		if len(rt.leases) > 0 {
			b.call(http.MethodDelete, "/v1/leases/"+rt.leases[len(rt.leases)-1].ID, "", http.StatusNoContent, nil)
		}
		var l lease
		b.call(http.MethodPost, "/v1/leases", fmt.Sprintf(`{"resource": %q, "ttl": 600, "wait": 10}`, resource), http.StatusCreated, &l)
		if l.Token == "" {
			return "1:1" // refused as unsigned; the failure is recorded
		}
		rt.leases = append(rt.leases, l)
	case n < 4:
		return rt.leases[rng.IntN(len(rt.leases))].Token
	}
	return rt.leases[len(rt.leases)-1].Token
}

// call is a lease call from a worker's goroutine: a failure is recorded,
// not fatal there.
func (b *tokenBook) call(method, path, body string, want int, into *lease) {
	req, err := http.NewRequest(method, b.h.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		b.failed("%s %s: %v", method, path, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := invClient.Do(req)
	if err != nil {
		b.failed("%s %s: %v", method, path, err)
		return
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		b.failed("%s %s: %d %s", method, path, resp.StatusCode, got)
		return
	}
	if into != nil {
		var l struct {
			LeaseID string `json:"lease_id"`
			Token   string `json:"token"`
		}
		if err := json.Unmarshal(got, &l); err != nil {
			b.failed("%s %s: %v", method, path, err)
		}
		into.ID, into.Token = l.LeaseID, l.Token
	}
}

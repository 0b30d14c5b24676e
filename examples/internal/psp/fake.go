// Package psp is the examples' payment provider (PSP): a fake one to run
// against (Fake, Serve) and the client the examples call it with
// (Client). The fake keeps an idempotency store of its own, as real
// providers do, and records every refund it makes, so that a test can
// count the money that left: the double charge a fence cannot stop
// (seed §9.10.1) is a count here.
package psp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
)

// Refund is a refund as the provider knows it.
type Refund struct {
	Ref            string `json:"id"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	Reference      string `json:"reference,omitempty"` // the merchant's own reference, free text
	AmountCents    int64  `json:"amount_cents"`
	Status         string `json:"status"`
}

// Stats counts what a Fake was asked and did.
type Stats struct {
	Charges int // refunds made: money that left the merchant
	Posts   int // POST /refunds received
	Gets    int // GET /refunds/{key} received
}

// Fake is a payment provider:
//
//	POST /refunds {"idempotency_key", "reference", "amount_cents"}  makes a refund
//	GET  /refunds/{key}                                            the refund made under key, or 404
//
// A POST with an idempotency key makes the refund once per key: a later
// or concurrent POST under the key gets the same refund. A POST without
// one makes a new refund every time, as a real provider does when the
// client sends no key. A POST makes the refund when it arrives and only
// then answers, so a client that gives up waiting has been charged all
// the same: the case a client must query rather than resend blindly.
type Fake struct {
	// Stall, if set, runs before the n-th POST (from 1) is answered, after
	// its refund is made: a slow provider. ctx ends when the client goes.
	Stall func(ctx context.Context, n int)

	mu      sync.Mutex
	byKey   map[string]Refund
	charges []Refund
	stats   Stats
}

// NewFake returns a provider that has made no refund.
func NewFake() *Fake { return &Fake{byKey: map[string]Refund{}} }

// Handler serves the provider's API.
func (p *Fake) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /refunds", p.create)
	mux.HandleFunc("GET /refunds/{key}", p.lookup)
	return mux
}

// Stats returns the counts so far.
func (p *Fake) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Charges returns every refund made so far, in the order made.
func (p *Fake) Charges() []Refund {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Refund(nil), p.charges...)
}

// ChargesFor counts the refunds made with reference.
func (p *Fake) ChargesFor(reference string) int {
	n := 0
	for _, r := range p.Charges() {
		if r.Reference == reference {
			n++
		}
	}
	return n
}

func (p *Fake) create(w http.ResponseWriter, r *http.Request) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.AmountCents < 1 {
		http.Error(w, `want {"amount_cents": >= 1, "idempotency_key" and "reference": optional}`, http.StatusBadRequest)
		return
	}
	ref, n, err := p.refund(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	if p.Stall != nil {
		p.Stall(r.Context(), n)
	}
	writeJSON(w, http.StatusOK, ref)
}

// errKeyReused is a key sent again with another amount: like real
// providers, refuse it rather than guess which request was meant.
var errKeyReused = errors.New("psp: idempotency key reused with another amount")

// refund returns the refund made under req's key, making it first if
// there is none or req has no key, and which POST this is.
func (p *Fake) refund(req Request) (Refund, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Posts++
	ref, ok := p.byKey[req.IdempotencyKey]
	switch {
	case req.IdempotencyKey == "":
		ok = false
	case ok && ref.AmountCents != req.AmountCents:
		return Refund{}, p.stats.Posts, errKeyReused
	}
	if !ok {
		ref = Refund{Ref: "re_" + rand.Text()[:16], IdempotencyKey: req.IdempotencyKey, Reference: req.Reference,
			AmountCents: req.AmountCents, Status: "succeeded"}
		if req.IdempotencyKey != "" {
			p.byKey[req.IdempotencyKey] = ref
		}
		p.charges = append(p.charges, ref)
		p.stats.Charges++
	}
	return ref, p.stats.Posts, nil
}

func (p *Fake) lookup(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.stats.Gets++
	ref, ok := p.byKey[r.PathValue("key")]
	p.mu.Unlock()
	if !ok {
		http.Error(w, "no refund under this idempotency key", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, ref)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

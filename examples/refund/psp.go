package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
)

// pspRefund is a refund as the payment provider knows it.
type pspRefund struct {
	Ref            string `json:"id"`
	IdempotencyKey string `json:"idempotency_key"`
	AmountCents    int64  `json:"amount_cents"`
	Status         string `json:"status"`
}

// pspStats counts what a fakePSP was asked and did.
type pspStats struct {
	Charges int // refunds made: money that left the merchant
	Posts   int // POST /refunds received
	Gets    int // GET /refunds/{key} received
}

// fakePSP is a payment provider with an idempotency store of its own:
//
//	POST /refunds {"idempotency_key", "amount_cents"}  makes the refund once per key
//	GET  /refunds/{key}                                the refund made under key, or 404
//
// A POST makes the refund when it arrives and only then answers, so a
// client that gives up waiting has been charged all the same: the case the
// worker must query rather than resend blindly.
type fakePSP struct {
	// Stall, if set, runs before the n-th POST (from 1) is answered, after
	// its refund is made: a slow provider. ctx ends when the client goes.
	Stall func(ctx context.Context, n int)

	mu      sync.Mutex
	refunds map[string]pspRefund // by idempotency key
	stats   pspStats
}

func newFakePSP() *fakePSP { return &fakePSP{refunds: map[string]pspRefund{}} }

// Handler serves the provider's API.
func (p *fakePSP) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /refunds", p.create)
	mux.HandleFunc("GET /refunds/{key}", p.lookup)
	return mux
}

// Stats returns the counts so far.
func (p *fakePSP) Stats() pspStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *fakePSP) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Key         string `json:"idempotency_key"`
		AmountCents int64  `json:"amount_cents"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Key == "" || req.AmountCents < 1 {
		http.Error(w, "want {\"idempotency_key\": non-empty, \"amount_cents\": >= 1}", http.StatusBadRequest)
		return
	}
	ref, n, err := p.refundOnce(req.Key, req.AmountCents)
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

// refundOnce returns the refund made under key, making it first if there
// is none, and which POST this is.
func (p *fakePSP) refundOnce(key string, amount int64) (pspRefund, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Posts++
	ref, ok := p.refunds[key]
	switch {
	case ok && ref.AmountCents != amount:
		return pspRefund{}, p.stats.Posts, errKeyReused
	case !ok:
		ref = pspRefund{Ref: "re_" + rand.Text()[:16], IdempotencyKey: key, AmountCents: amount, Status: "succeeded"}
		p.refunds[key] = ref
		p.stats.Charges++
	}
	return ref, p.stats.Posts, nil
}

func (p *fakePSP) lookup(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.stats.Gets++
	ref, ok := p.refunds[r.PathValue("key")]
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

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
)

// TestFakePSPRefundsOncePerKey: concurrent and later requests under one
// idempotency key get the one refund made for it; the same key with
// another amount is refused; an unknown key has no refund.
func TestFakePSPRefundsOncePerKey(t *testing.T) {
	psp, url := startPSP(t)
	post := func(key string, amount int64) (pspRefund, int) {
		body, _ := json.Marshal(map[string]any{"idempotency_key": key, "amount_cents": amount})
		resp, err := http.Post(url+"/refunds", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return pspRefund{}, 0
		}
		defer resp.Body.Close()
		var ref pspRefund
		if resp.StatusCode == http.StatusOK {
			_ = json.NewDecoder(resp.Body).Decode(&ref)
		}
		return ref, resp.StatusCode
	}
	refs := make([]pspRefund, 8)
	var wg sync.WaitGroup
	for i := range refs {
		wg.Go(func() { refs[i], _ = post("8842", 2500) })
	}
	wg.Wait()
	for i, ref := range refs {
		if ref.Ref == "" || ref != refs[0] {
			t.Errorf("request %d got %+v, request 0 %+v: want one refund", i, ref, refs[0])
		}
	}
	if _, status := post("8842", 9999); status != http.StatusUnprocessableEntity {
		t.Errorf("same key, another amount: %d, want 422", status)
	}

	p := newProvider(url, eventTimeout)
	for _, tc := range []struct {
		key  string
		want error
	}{
		{"8842", nil},
		{"7777", errNoRefund},
	} {
		var ref pspRefund
		err := p.do(t.Context(), "GET", "/refunds/"+tc.key, nil, &ref)
		if !errors.Is(err, tc.want) || (err == nil && ref != refs[0]) {
			t.Errorf("GET %s: %+v, %v; want %v", tc.key, ref, err, tc.want)
		}
	}
	if got, want := psp.Stats(), (pspStats{Charges: 1, Posts: 9, Gets: 2}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
}

package psp

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// start serves a Fake for the test and returns it and a client of it.
func start(t *testing.T, timeout time.Duration) (*Fake, *Client) {
	t.Helper()
	p := NewFake()
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	return p, NewClient(srv.URL, timeout)
}

// TestRefundsOncePerKey: concurrent and later requests under one
// idempotency key get the one refund made for it; the same key with
// another amount is refused; an unknown key has no refund.
func TestRefundsOncePerKey(t *testing.T) {
	p, c := start(t, 10*time.Second)
	refs := make([]Refund, 8)
	var wg sync.WaitGroup
	for i := range refs {
		wg.Go(func() {
			var err error
			refs[i], _, err = c.Refund(t.Context(), Request{IdempotencyKey: "8842", Reference: "8842", AmountCents: 2500})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, ref := range refs {
		if ref.Ref == "" || ref != refs[0] {
			t.Errorf("request %d got %+v, request 0 %+v: want one refund", i, ref, refs[0])
		}
	}
	if _, _, err := c.Refund(t.Context(), Request{IdempotencyKey: "8842", AmountCents: 9999}); !errors.Is(err, ErrRefused) {
		t.Errorf("same key, another amount: %v, want %v", err, ErrRefused)
	}
	for _, tc := range []struct {
		key  string
		want error
	}{
		{"8842", nil},
		{"7777", ErrNoRefund},
	} {
		ref, err := c.Lookup(t.Context(), tc.key)
		if !errors.Is(err, tc.want) || (err == nil && ref != refs[0]) {
			t.Errorf("GET %s: %+v, %v; want %v", tc.key, ref, err, tc.want)
		}
	}
	if got, want := p.Stats(), (Stats{Charges: 1, Posts: 9, Gets: 2}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if got := p.Charges(); len(got) != 1 || got[0] != refs[0] {
		t.Errorf("charges %+v, want the one refund %+v", got, refs[0])
	}
}

// TestRefundsWithoutKeyEveryTime: without an idempotency key each request
// is a refund of its own, all recorded, none found by a lookup.
func TestRefundsWithoutKeyEveryTime(t *testing.T) {
	p, c := start(t, 10*time.Second)
	a, _, errA := c.Refund(t.Context(), Request{Reference: "8842", AmountCents: 2500})
	b, _, errB := c.Refund(t.Context(), Request{Reference: "8842", AmountCents: 2500})
	if errA != nil || errB != nil || a.Ref == b.Ref {
		t.Fatalf("two requests without a key: %+v %v, %+v %v; want two refunds", a, errA, b, errB)
	}
	if n := p.ChargesFor("8842"); n != 2 {
		t.Errorf("charges with reference 8842: %d, want 2", n)
	}
	if got, want := p.Stats(), (Stats{Charges: 2, Posts: 2}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
}

// TestUnansweredRequest: the provider makes the refund but answers too
// late. With a key, the client asks what it did and gets that refund,
// sending nothing again; without one, it can only say the outcome is
// unknown, and does not send again either.
func TestUnansweredRequest(t *testing.T) {
	for _, tc := range []struct {
		name        string
		key         string
		wantErr     error
		wantQueried bool
		want        Stats
	}{
		{"WithKeyQueries", "8842", nil, true, Stats{Charges: 1, Posts: 1, Gets: 1}},
		{"WithoutKeyUnknown", "", ErrOutcomeUnknown, false, Stats{Charges: 1, Posts: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, c := start(t, time.Second)
			p.Stall = func(ctx context.Context, n int) {
				if n == 1 { // answer only once the client has given up
					<-ctx.Done()
				}
			}
			ref, queried, err := c.Refund(t.Context(), Request{IdempotencyKey: tc.key, Reference: "8842", AmountCents: 2500})
			if !errors.Is(err, tc.wantErr) || queried != tc.wantQueried || (err == nil && ref.Ref == "") {
				t.Errorf("got %+v, queried %t, %v; want queried %t, %v", ref, queried, err, tc.wantQueried, tc.wantErr)
			}
			if got := p.Stats(); got != tc.want {
				t.Errorf("stats %+v, want %+v", got, tc.want)
			}
		})
	}
}

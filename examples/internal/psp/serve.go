package psp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Serve serves a Fake on addr until ctx ends, its first refund answer
// delayed by slow, and tells w what it did when it stops. It runs as a
// process of its own so that pausing a client (Ctrl-Z) does not pause its
// provider.
func Serve(ctx context.Context, addr string, slow time.Duration, w io.Writer) error {
	p := NewFake()
	p.Stall = func(ctx context.Context, n int) {
		if n != 1 || slow <= 0 {
			return
		}
		t := time.NewTimer(slow)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// Requests' contexts end with ctx, so a stalled answer does not hold
	// up the shutdown.
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	fmt.Fprintf(w, "fake payment provider on http://%s; first answer after %s; Ctrl-C stops it\n", ln.Addr(), slow)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	st := p.Stats()
	fmt.Fprintf(w, "provider: %d refund(s) made, %d POST /refunds, %d GET /refunds/{key}\n", st.Charges, st.Posts, st.Gets)
	for _, r := range p.Charges() {
		fmt.Fprintf(w, "  %s %d cents, reference %q, idempotency key %q\n", r.Ref, r.AmountCents, r.Reference, r.IdempotencyKey)
	}
	return err
}

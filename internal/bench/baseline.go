package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// stubAnswer is the size and shape of the gateway's answer to one add.
var stubAnswer = []byte(`{"operation":"add","resource":"acct/1234","token":"1:56","statements":[{"rows_affected":1}]}` + "\n")

// emptyRoundTrip measures the allocations of the HTTP plumbing alone: the
// load generator's client and net/http's server, against a handler that
// answers like the gateway without doing anything. The gateway path's
// allocations minus these are the gateway's own.
func emptyRoundTrip(ctx context.Context, warmup, duration time.Duration) (Path, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Path{}, fmt.Errorf("bench: empty round trip: %w", err)
	}
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(stubAnswer)
		}),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	lc := newLeanClient(ln.Addr().String(), operationName, sameToken("1:1"), 1)
	p := drive(ctx, 1, Uniform, window{warmup: warmup, duration: duration}, lc.write)
	lc.close()

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return p, fmt.Errorf("bench: empty round trip: %w", err)
	}
	return p, nil
}

// sameToken gives every account one token: for a server that checks none.
func sameToken(tok string) []string {
	out := make([]string, Accounts)
	for i := range out {
		out[i] = tok
	}
	return out
}

package bench

import (
	"context"
	"encoding/json"
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
	st, err := startStub(nil)
	if err != nil {
		return Path{}, fmt.Errorf("bench: empty round trip: %w", err)
	}
	lc := newLeanClient(st.addr, operationName, sameToken("1:1"), 1)
	p := drive(ctx, 1, Uniform, window{warmup: warmup, duration: duration}, lc.write)
	lc.close()
	if err := st.close(ctx); err != nil {
		return p, fmt.Errorf("bench: empty round trip: %w", err)
	}
	return p, nil
}

// stub is a bare net/http server on loopback, no router, no middleware,
// that takes the gateway's requests as they are (path and token header
// ignored) and answers like the gateway. With a write, it decodes the
// account from the JSON body and runs the write first: the HTTP floor of
// the overhead measurement, where it differs from the gateway only in
// what the gateway does. Without one it does nothing but answer: the
// empty round trip.
type stub struct {
	addr   string
	srv    *http.Server
	served chan error
}

func startStub(write writeFunc) (*stub, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	st := &stub{addr: ln.Addr().String(), served: make(chan error, 1)}
	st.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if write != nil {
			var args struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(body, &args); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			// Like the gateway's, the write runs to completion whatever the
			// client does: writeFunc's contract.
			if kind, detail := write(context.WithoutCancel(r.Context()), args.ID); kind != "" {
				http.Error(w, kind+": "+detail, http.StatusInternalServerError)
				return
			}
		}
		w.Header()["Content-Type"] = jsonContentType
		_, _ = w.Write(stubAnswer)
	})}
	go func() { st.served <- st.srv.Serve(ln) }()
	return st, nil
}

var jsonContentType = []string{"application/json"}

// close shuts st down, waiting a little for a request in flight.
func (st *stub) close(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := st.srv.Shutdown(sctx)
	if serr := <-st.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// sameToken gives every account one token: for a server that checks none.
func sameToken(tok string) []string {
	out := make([]string, Accounts)
	for i := range out {
		out[i] = tok
	}
	return out
}

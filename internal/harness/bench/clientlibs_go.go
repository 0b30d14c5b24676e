package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fencegw/fencegw/client"
)

// runGoDriver is Go's ClientDriver, in this process: the Go client's
// lease.Write (path "client"), or net/http sending the same request (path
// "bare": the same headers, a new Idempotency-Key per write, a transport
// that keeps a connection per writer).
func runGoDriver(ctx context.Context, path, url string, writers, first int, warmup, duration time.Duration) (driverResult, error) {
	c := client.New(url)
	leases := make([]*client.Lease, 0, writers)
	defer func() {
		for _, l := range leases {
			_ = l.Release(context.WithoutCancel(ctx))
		}
	}()
	for w := range writers {
		l, err := c.Acquire(ctx, "acct/"+strconv.Itoa(first+w), client.AcquireOptions{TTL: 2 * time.Minute, Wait: 10 * time.Second})
		if err != nil {
			return driverResult{}, err
		}
		leases = append(leases, l)
	}
	bare := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers, IdleConnTimeout: time.Minute}}
	defer bare.CloseIdleConnections()
	send := func(l *client.Lease, args map[string]any) error {
		_, err := l.Write(ctx, "add", args)
		return err
	}
	if path != "client" {
		send = func(l *client.Lease, args map[string]any) error { return bareWrite(ctx, bare, url, l.Token(), args) }
	}
	start := time.Now()
	from, until := start.Add(warmup), start.Add(warmup+duration)
	lat := make([][]time.Duration, writers)
	errs := make([]int64, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			args := map[string]any{"id": first + w, "amount": 1}
			for {
				t0 := time.Now()
				if !t0.Before(until) {
					return
				}
				if err := send(leases[w], args); err != nil {
					errs[w]++
					continue
				}
				if !t0.Before(from) {
					lat[w] = append(lat[w], time.Since(t0))
				}
			}
		})
	}
	wg.Wait()
	var n int64
	for _, e := range errs {
		n += e
	}
	return driverResult{lat: merge(lat), errors: n, seconds: duration.Seconds()}, nil
}

// bareWrite is Go's bare HTTP call of the client's write.
func bareWrite(ctx context.Context, hc *http.Client, url, token string, args map[string]any) error {
	body, err := json.Marshal(args)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/ops/add", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("Fencing-Token", token)
	req.Header.Set("Idempotency-Key", strconv.Quote(client.NewIdempotencyKey()))
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New("bench: " + fmt.Sprint(resp.StatusCode))
	}
	return nil
}

package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ReplicaShare is one replica's part of a cell's gateway path.
type ReplicaShare struct {
	Addr string `json:"addr"`
	PID  int    `json:"pid"`
	// Writes is the replica's own count of the writes it acknowledged
	// in the gateway path (its fencegw_writes_total), warmup included.
	Writes int64 `json:"writes"`
}

// gatewayPath is what one run of the gateway path measured.
type gatewayPath struct {
	path Path
	// groupSize is the mean size of the transactions of coalescing
	// resources, all replicas together; 1 when none ran.
	groupSize float64
	shares    []ReplicaShare
}

// runGateway measures the gateway path of a cell on t: n clients over the
// lean client, its connections spread over t's gateways round-robin.
func (e *env) runGateway(ctx context.Context, t *target, hc *http.Client, n int, d Dist, signed []string) (gatewayPath, error) {
	out := gatewayPath{groupSize: 1}
	addrs, err := t.addrs()
	if err != nil {
		return out, err
	}
	before, err := scrapeAll(ctx, hc, t.urls, e.work.op.Name)
	if err != nil {
		return out, err
	}
	lc := newLeanClientOver(addrs, e.work.op.Name, signed, n)
	defer lc.close()
	out.path = drive(ctx, n, d, e.cfg.window(), lc.write)
	after, err := scrapeAll(ctx, hc, t.urls, e.work.op.Name)
	if err != nil {
		return out, err
	}
	var sum, count float64
	for i := range t.urls {
		sum += after[i].batchSum - before[i].batchSum
		count += after[i].batchCount - before[i].batchCount
		if len(t.replicas) > 0 {
			out.shares = append(out.shares, ReplicaShare{Addr: t.replicas[i].addr, PID: t.replicas[i].pid(), Writes: int64(after[i].writes - before[i].writes)})
		}
	}
	if count > 0 {
		out.groupSize = sum / count
	}
	if !t.inProcess { // only the load generator's allocations were seen
		out.path.AllocsPerWrite, out.path.BytesPerWrite = 0, 0
	}
	return out, nil
}

// gatewayCounters are the series of one gateway's /metrics the bench reads.
type gatewayCounters struct {
	batchSum, batchCount float64 // fencegw_transaction_requests
	writes               float64 // the operation's acknowledged writes
}

// scrapeAll reads the counters of every gateway of urls.
func scrapeAll(ctx context.Context, hc *http.Client, urls []string, op string) ([]gatewayCounters, error) {
	out := make([]gatewayCounters, len(urls))
	for i, u := range urls {
		c, err := scrape(ctx, hc, u, op)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// scrape reads one gateway's counters from its /metrics.
func scrape(ctx context.Context, hc *http.Client, base, op string) (gatewayCounters, error) {
	var c gatewayCounters
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return c, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return c, fmt.Errorf("bench: the gateway's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("bench: the gateway's metrics: %s", resp.Status)
	}
	written := `fencegw_writes_total{operation="` + op + `",outcome="ok"}`
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case "fencegw_transaction_requests_sum":
			c.batchSum = v
		case "fencegw_transaction_requests_count":
			c.batchCount = v
		case written:
			c.writes = v
		}
	}
	return c, sc.Err()
}

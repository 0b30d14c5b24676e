package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The metrics of etcd a lock cycle is charged with: the Raft proposals it
// committed (the work asked of the cluster, whoever asks) and the CPU of
// the member that serves them (the work that answering costs: the
// proposals, and the reads, compares and watch events besides).
const (
	proposalsMetric = "etcd_server_proposals_committed_total"
	etcdCPUMetric   = "process_cpu_seconds_total"
)

// etcdMetrics is what one scrape of etcd's metrics said.
type etcdMetrics struct{ proposals, cpuSeconds float64 }

// readEtcdMetrics reads proposalsMetric and etcdCPUMetric from the first
// of endpoints, which serves its metrics on its client URL (plaintext
// only: a TLS etcd's figures are not read).
func readEtcdMetrics(ctx context.Context, hc *http.Client, endpoints []string) (etcdMetrics, error) {
	if len(endpoints) == 0 || !strings.HasPrefix(endpoints[0], "http://") {
		return etcdMetrics{}, fmt.Errorf("bench: etcd's metrics are read over plain HTTP only")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoints[0], "/")+"/metrics", nil)
	if err != nil {
		return etcdMetrics{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return etcdMetrics{}, fmt.Errorf("bench: etcd metrics: %w", err)
	}
	defer resp.Body.Close()
	var m etcdMetrics
	found := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		for name, into := range map[string]*float64{proposalsMetric: &m.proposals, etcdCPUMetric: &m.cpuSeconds} {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				if *into, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
					return etcdMetrics{}, fmt.Errorf("bench: etcd metric %s: %w", name, err)
				}
				found[name] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return etcdMetrics{}, fmt.Errorf("bench: etcd metrics: %w", err)
	}
	for _, name := range []string{proposalsMetric, etcdCPUMetric} {
		if !found[name] {
			return etcdMetrics{}, fmt.Errorf("bench: etcd's metrics have no %s", name)
		}
	}
	return m, nil
}

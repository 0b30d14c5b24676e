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

// proposalsMetric counts the Raft proposals etcd committed: the work a
// lock cycle asks of the cluster, whoever asks.
const proposalsMetric = "etcd_server_proposals_committed_total"

// etcdProposals reads proposalsMetric from the first of endpoints, which
// serves its metrics on its client URL (plaintext only: a TLS etcd's
// figure is not read).
func etcdProposals(ctx context.Context, hc *http.Client, endpoints []string) (float64, error) {
	if len(endpoints) == 0 || !strings.HasPrefix(endpoints[0], "http://") {
		return 0, fmt.Errorf("bench: etcd's metrics are read over plain HTTP only")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoints[0], "/")+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("bench: etcd metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), proposalsMetric+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("bench: etcd metrics: %w", err)
	}
	return 0, fmt.Errorf("bench: etcd's metrics have no %s", proposalsMetric)
}

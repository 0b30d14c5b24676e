package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/fencegw/fencegw/gateway"
)

// leaseClient runs lock cycles through the gateway's lease API: acquire
// (POST /v1/leases, waiting in line), optionally one fenced write with the
// token, release (DELETE). A cycle is what a job per order or a lock per
// request costs the gateway and etcd.
type leaseClient struct {
	hc    *http.Client
	urls  []string // the gateways, taken in turn
	next  atomic.Uint64
	work  workload
	write bool
}

// leaseTTL and leaseWait bound a cycle's lease: a cycle releases long
// before its TTL, and waits in line on a hot resource behind the others.
const (
	cycleTTL  = 30
	cycleWait = 60
)

func newLeaseClient(urls []string, clients int, work workload, write bool) *leaseClient {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	return &leaseClient{hc: &http.Client{Transport: tr}, urls: urls, work: work, write: write}
}

func (c *leaseClient) close() { c.hc.CloseIdleConnections() }

// cycle takes the lock of account id, writes under it if asked, and
// releases it.
func (c *leaseClient) cycle(ctx context.Context, id int64) (kind, detail string) {
	base := c.urls[c.next.Add(1)%uint64(len(c.urls))]
	resource := "acct/" + strconv.FormatInt(id, 10)
	body := fmt.Sprintf(`{"resource":%q,"ttl":%d,"wait":%d}`, resource, cycleTTL, cycleWait)
	var lease struct {
		ID    string `json:"lease_id"`
		Token string `json:"token"`
	}
	if kind, detail := c.do(ctx, http.MethodPost, base+"/v1/leases", "", body, http.StatusCreated, &lease); kind != "" {
		return "acquire " + kind, detail
	}
	if c.write {
		w := fmt.Sprintf(`{"id":%d,"amount":%d}`, id, Amount)
		if kind, detail := c.do(ctx, http.MethodPost, base+"/v1/ops/"+c.work.op.Name, lease.Token, w, http.StatusOK, nil); kind != "" {
			c.do(context.WithoutCancel(ctx), http.MethodDelete, base+"/v1/leases/"+lease.ID, "", "", http.StatusNoContent, nil)
			return "write " + kind, detail
		}
	}
	if kind, detail := c.do(ctx, http.MethodDelete, base+"/v1/leases/"+lease.ID, "", "", http.StatusNoContent, nil); kind != "" {
		return "release " + kind, detail
	}
	return "", ""
}

// do sends one request and reads its answer into out (nil: discarded);
// an answer other than want is an error kind, the status.
func (c *leaseClient) do(ctx context.Context, method, url, token, body string, want int, out any) (kind, detail string) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewBufferString(body))
	if err != nil {
		return "error", err.Error()
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set(gateway.TokenHeader, token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return "transport", err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return "transport", err.Error()
	case resp.StatusCode != want:
		return strconv.Itoa(resp.StatusCode), string(b)
	case out != nil:
		if err := json.Unmarshal(b, out); err != nil {
			return "answer", err.Error()
		}
	}
	return "", ""
}

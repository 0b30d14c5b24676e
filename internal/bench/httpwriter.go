package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/clip"
)

// requestTimeout is a safety net for one HTTP write; a healthy loopback
// write takes milliseconds.
const requestTimeout = 30 * time.Second

// newHTTPClient returns a client that keeps one connection per load client
// alive, so no write pays for a TCP handshake after warmup. MaxConnsPerHost
// holds it to that many: without it the transport dials a spare whenever a
// write finds no idle connection, and 1,000 clients open ~1,300.
func newHTTPClient(clients int) *http.Client {
	return &http.Client{
		Timeout: requestTimeout,
		Transport: &http.Transport{
			Proxy:               nil, // loopback only: never via $HTTP_PROXY
			MaxIdleConns:        clients,
			MaxIdleConnsPerHost: clients,
			MaxConnsPerHost:     clients,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
}

// httpWriter sends writes to a gateway at base as any service would: POST
// /v1/ops/{op} with a JSON body and the Fencing-Token header, no
// Idempotency-Key, so each write is one PostgreSQL round trip there too.
func httpWriter(hc *http.Client, base, op, token string) writeFunc {
	url := strings.TrimRight(base, "/") + "/v1/ops/" + op
	return func(ctx context.Context, id int64) (string, string) {
		body := make([]byte, 0, 48)
		body = append(body, `{"id":`...)
		body = strconv.AppendInt(body, id, 10)
		body = append(body, `,"amount":`...)
		body = strconv.AppendInt(body, Amount, 10)
		body = append(body, '}')
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return "request", err.Error()
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(gateway.TokenHeader, token)
		resp, err := hc.Do(req)
		if err != nil {
			return "transport", err.Error()
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			// Drained, or the connection could not be reused.
			_, err = io.Copy(io.Discard, resp.Body)
			if err != nil {
				return "transport", err.Error()
			}
			return "", ""
		}
		return problemKind(resp)
	}
}

// problemKind names a refused write by status and problem type: "409
// stale-token".
func problemKind(resp *http.Response) (string, string) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	var p struct {
		Type   string `json:"type"`
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(b, &p)
	kind := strconv.Itoa(resp.StatusCode)
	if _, t, ok := strings.Cut(p.Type, "urn:fencegw:problem:"); ok {
		kind += " " + t
	}
	return kind, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, clip.String(strings.TrimSpace(string(b)), 200))
}

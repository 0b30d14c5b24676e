package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fencegw/fencegw/internal/clip"
)

// requestTimeout is a safety net for one HTTP write; a healthy loopback
// write takes milliseconds.
const requestTimeout = 30 * time.Second

// newHTTPClient is the client for the lease that lends a cell its token;
// the writes themselves go through a leanClient.
func newHTTPClient() *http.Client {
	return &http.Client{
		Timeout:   requestTimeout,
		Transport: &http.Transport{Proxy: nil}, // loopback only: never via $HTTP_PROXY
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

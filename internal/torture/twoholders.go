package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/torture/check"
)

// wentBackResource is the resource only the nemesis writes (the workers'
// are r0, r1, …): on it, the fence is what the nemesis's own writes left.
const wentBackResource = "nemesis"

// staleAfterLoss is the nemesis acting as two holders of one resource in
// turn, to show a failover to a standby that is behind letting a stale
// write in (--async-standby). Before the failover it takes a lease (token
// T0) and lets it go unused, then takes the next lease (T1 > T0) and
// writes with it once the standby receives nothing more: the write is
// acknowledged, and lost with the primary. After the promotion it writes
// with T0: the fence went back below T1, so the older holder's write is
// applied, which the checker reports as fence-went-back. It records what
// it does in a history of its own, as a worker does.
type staleAfterLoss struct {
	gateways []string
	c        []*client.Client
	id       int // its worker number in the histories
	mu       sync.Mutex
	history  *json.Encoder
	file     *os.File
	round    int
	old      string // T0, for after the promotion
	// lastUnavailable: the last write was refused 503 not-applied.
	lastUnavailable bool
}

func newStaleAfterLoss(gateways []string, historyPath string, id int) (*staleAfterLoss, error) {
	f, err := os.Create(historyPath)
	if err != nil {
		return nil, err
	}
	s := &staleAfterLoss{gateways: gateways, id: id, history: json.NewEncoder(f), file: f}
	for _, g := range gateways {
		s.c = append(s.c, client.New(g))
	}
	return s, nil
}

// attempts bounds each step: the nemesis kills gateways too, and a step
// tries the next gateway when one is down.
const attempts = 6

func (s *staleAfterLoss) close() { s.file.Close() }

// beforeLoss takes T0 and lets it go, then takes T1 and writes with it
// until a write is acknowledged. Each attempt is a write of its own
// (intent), as a client's retries without a key would be.
func (s *staleAfterLoss) beforeLoss(ctx context.Context) {
	s.round++
	s.old = ""
	opts := client.AcquireOptions{TTL: 30 * time.Second}
	var first, second *client.Lease
	for i := 0; i < attempts && second == nil; i++ {
		c := s.c[i%len(s.c)]
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		if first == nil {
			if first, err = c.Acquire(actx, "res/"+wentBackResource, opts); err == nil {
				_ = first.Release(actx)
			}
		}
		if first != nil {
			second, _ = c.Acquire(actx, "res/"+wentBackResource, opts)
		}
		cancel()
	}
	if second == nil {
		return
	}
	defer second.Release(context.WithoutCancel(ctx))
	for i := 0; i < attempts; i++ {
		if s.write(ctx, i, second.Token(), fmt.Sprintf("nemesis-%d-new-%d", s.round, i)) == check.TypeOK {
			s.old = first.Token()
			return
		}
	}
}

// afterLoss writes with T0, the token the lost write had made stale, once
// a gateway has reconnected to the promoted server, until the write is
// answered for certain.
func (s *staleAfterLoss) afterLoss(ctx context.Context) {
	if s.old == "" {
		return
	}
	for i := 0; i < attempts; i++ {
		for wait := time.Now().Add(10 * time.Second); time.Now().Before(wait) && !s.ready(ctx, i); {
			time.Sleep(100 * time.Millisecond)
		}
		typ := s.write(ctx, i, s.old, fmt.Sprintf("nemesis-%d-old-%d", s.round, i))
		if typ != check.TypeInfo && (typ != check.TypeFail || !s.lastUnavailable) {
			break
		}
	}
	s.old = ""
}

// ready reports whether gateway i%n can write: the write after a
// promotion should not be spent on a pool still reconnecting.
func (s *staleAfterLoss) ready(ctx context.Context, i int) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.gateways[i%len(s.gateways)]+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// write sends one append through gateway i%n and records it.
func (s *staleAfterLoss) write(ctx context.Context, i int, token, intent string) string {
	ev := check.Event{Worker: s.id, Intent: intent, Resource: "res/" + wentBackResource, Token: token}
	s.record(ev, check.TypeInvoke, "")
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := s.c[i%len(s.c)].Write(wctx, token, "append", map[string]any{"r": wentBackResource, "intent": intent, "worker": s.id}, client.WithIdempotencyKey(intent))
	typ, detail := outcome(err)
	s.lastUnavailable = typ == check.TypeFail && detail == "unavailable"
	s.record(ev, typ, detail)
	return typ
}

func (s *staleAfterLoss) record(ev check.Event, typ, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev.Time, ev.Type, ev.Detail = time.Now(), typ, detail
	_ = s.history.Encode(ev)
}

package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// wentBackResource is the resource only the nemesis writes (the workers'
// are r0, r1, …): on it, the fence is what the nemesis's own writes left.
const wentBackResource = "nemesis"

// twoHolders is the nemesis acting as two holders of one resource in
// turn. It takes a lease (token T0) and lets it go unused, then takes the
// next lease (T1 > T0) and writes with it; later it writes with T0: the
// book's paused client, whose late write only the fence can refuse.
//
// Without a failover (lateWrite) the T0 write follows at once, so every
// run has one such write however the random pauses fall: refused with
// fencing, a stale write the checker must report in the control run.
// With --async-standby the T1 write is made once the standby receives
// nothing more (beforeLoss), so it is acknowledged and lost with the
// primary; after the promotion (afterLoss) the fence went back below T1,
// the T0 write is applied, and the checker reports fence-went-back.
//
// It records what it does in a history of its own, as a worker does.
type twoHolders struct {
	// family is res, sem for a late holder of a permit (latepermit.go),
	// or churn for the successor of lease-churn holders
	// (nemesis_churn.go).
	family   string
	slot     string // the resource written: res/nemesis, a permit slot's, or a churn resource
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
	// front, with --wire, sends its writes through the gateways' SQL
	// front, so that the control of the front fails whatever the
	// workers' pauses did.
	front *wireWriter
	// grants, of the successor of lease-churn holders, logs the leases
	// it takes (nil: none kept).
	grants *grantLog
}

func newTwoHolders(gateways []string, historyPath string, id int, opts ...client.Option) (*twoHolders, error) {
	f, err := os.Create(historyPath)
	if err != nil {
		return nil, err
	}
	s := &twoHolders{family: "res", slot: "res/" + wentBackResource, gateways: gateways, id: id, history: json.NewEncoder(f), file: f}
	for _, g := range gateways {
		s.c = append(s.c, client.New(g, opts...))
	}
	return s, nil
}

// attempts bounds each step: the nemesis kills gateways too, and a step
// tries the next gateway when one is down.
const attempts = 6

// probeTTL is the TTL of the nemesis's leases, and probeWait how long it
// waits for one. A lease of its own that outlived its round — a release
// the nemesis's faults broke, an acquire whose answer was lost — holds
// the resource until its TTL runs out: a short TTL and a wait longer than
// it let the next round take the resource after it, where a 30 s TTL and
// no wait left the late holder locked out of its own resource for most
// of a run.
const (
	probeTTL  = 2 * time.Second
	probeWait = 2*probeTTL + time.Second
)

func (s *twoHolders) close() {
	s.file.Close()
	s.grants.close()
}

// beforeLoss takes T0 and lets it go, then takes T1 and writes with it
// until a write is acknowledged. Each attempt is a write of its own
// (intent), as a client's retries without a key would be.
func (s *twoHolders) beforeLoss(ctx context.Context) {
	s.round++
	s.old = ""
	opts := client.AcquireOptions{TTL: probeTTL, Wait: probeWait}
	first := s.acquire(ctx, "res/"+wentBackResource, opts)
	if first == nil {
		return
	}
	s.release(ctx, first)
	second := s.acquire(ctx, "res/"+wentBackResource, opts)
	if second == nil {
		return
	}
	defer s.release(ctx, second)
	if s.writeUntilOK(ctx, second.Token(), "new") {
		s.old = first.Token()
	}
}

// acquire takes a lease on resource, through one gateway after another
// while the faults refuse it, at most attempts times; nil if none was
// granted.
func (s *twoHolders) acquire(ctx context.Context, resource string, opts client.AcquireOptions) *client.Lease {
	for i := 0; i < attempts && ctx.Err() == nil; i++ {
		actx, cancel := context.WithTimeout(ctx, opts.Wait+5*time.Second)
		l, err := s.grants.acquire(actx, s.c[i%len(s.c)], resource, opts, check.GrantEndRelease)
		cancel()
		if err == nil {
			return l
		}
	}
	return nil
}

// release lets l go, also once ctx has ended.
func (s *twoHolders) release(ctx context.Context, l *client.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeWait)
	defer cancel()
	_ = l.Release(rctx)
}

// writeUntilOK writes with token through one gateway after another until
// a write is acknowledged, at most attempts times, each a write of its
// own (intent: the round's, what, the attempt); it reports whether one
// was.
func (s *twoHolders) writeUntilOK(ctx context.Context, token, what string) bool {
	for i := 0; i < attempts && ctx.Err() == nil; i++ {
		if s.write(ctx, i, token, fmt.Sprintf("%s-%d-%s-%d", s.intents(), s.round, what, i)) == check.TypeOK {
			return true
		}
	}
	return false
}

// afterLoss writes with T0, the token the write with T1 made stale, once
// a gateway is ready (after a failover, reconnected to the promoted
// server), until the write is answered for certain; answered says whether
// it was.
func (s *twoHolders) afterLoss(ctx context.Context) (answered bool) {
	if s.old == "" {
		return false
	}
	defer func() { s.old = "" }()
	for i := 0; i < attempts; i++ {
		g := s.readyGateway(ctx, i, 10*time.Second)
		typ := s.write(ctx, g, s.old, fmt.Sprintf("%s-%d-old-%d", s.intents(), s.round, i))
		if typ != check.TypeInfo && (typ != check.TypeFail || !s.lastUnavailable) {
			return true
		}
	}
	return false
}

// readyGateway is the first gateway, from the i-th on, that is ready,
// asking each in turn for up to d: a frozen, cut off or restarting
// gateway does not hold the late holder up while another can write. If
// none is, the i-th.
func (s *twoHolders) readyGateway(ctx context.Context, i int, d time.Duration) int {
	for deadline := time.Now().Add(d); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
		for k := range s.gateways {
			if s.ready(ctx, i+k) {
				return i + k
			}
		}
	}
	return i
}

// lateWrite acts out the whole timeline on one primary: T0 taken and let
// go, T1 writes, then T0 writes. It reports whether the T0 write was
// answered for certain, applied or refused.
func (s *twoHolders) lateWrite(ctx context.Context) bool {
	s.beforeLoss(ctx)
	return s.afterLoss(ctx)
}

// ready reports whether gateway i%n can write: the write after a
// promotion should not be spent on a pool still reconnecting.
func (s *twoHolders) ready(ctx context.Context, i int) bool {
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
func (s *twoHolders) write(ctx context.Context, i int, token, intent string) string {
	ev := check.Event{Worker: s.id, Intent: intent, Resource: s.slot, Token: historyToken(token)}
	s.record(ev, check.TypeInvoke, "")
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	op := appendOp(s.family)
	var typ, detail string
	if s.front != nil && s.family == "res" {
		typ, detail = s.front.write(wctx, s.front.urls[i%len(s.front.urls)], token, s.slot, intent, s.id)
	} else {
		_, err := s.c[i%len(s.c)].Write(wctx, token, op, map[string]any{"r": keyArg(s.slot), "intent": intent, "worker": s.id}, client.WithIdempotencyKey(intent))
		typ, detail = outcome(err)
	}
	s.lastUnavailable = typ == check.TypeFail && detail == "unavailable"
	s.record(ev, typ, detail)
	return typ
}

func (s *twoHolders) record(ev check.Event, typ, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev.Time, ev.Type, ev.Detail = time.Now(), typ, detail
	_ = s.history.Encode(ev)
}

// keyArg is the {r} of resource's key: r3 of churn/r3, nemesis of
// res/nemesis and of sem/nemesis#2.
func keyArg(resource string) string {
	_, r, _ := strings.Cut(resource, "/")
	r, _, _ = strings.Cut(r, "#")
	return r
}

// intents prefixes the intents of its writes: the late holder of a
// permit writes beside the late holder of a lock, and the successor of
// lease-churn holders beside both, each intent once.
func (s *twoHolders) intents() string {
	if s.family == "res" {
		return "nemesis"
	}
	return "nemesis-" + s.family
}

// succeed takes the lease on the lease-churn resource after its holder,
// which the nemesis has stopped (it is granted once that holder's lease
// expired), and writes with it until a write is acknowledged; it reports
// whether one was.
func (s *twoHolders) succeed(ctx context.Context, resource string) bool {
	s.round++
	s.slot = resource
	l := s.acquire(ctx, resource, client.AcquireOptions{TTL: probeTTL, Wait: churnWait})
	if l == nil {
		return false
	}
	defer s.release(ctx, l)
	return s.writeUntilOK(ctx, l.Token(), "successor")
}

package torture

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/torture/check"
)

// A write's attempts under its key: at most maxAttempts, within
// writeBudget of the first; each waits for its answer writeTimeout, or a
// short timeout of a quarter to one TTL (one attempt in shortTimeoutOneIn),
// after which the client gives up on it while the gateway may still be
// working on it. One write in hedgeOneIn sends its second attempt beside
// the first, unanswered after up to hedgeWithin; one in redeliverOneIn
// sends one attempt more once answered for good.
const (
	maxAttempts       = 4
	writeBudget       = 8 * time.Second
	writeTimeout      = 5 * time.Second
	shortTimeoutOneIn = 4
	hedgeOneIn        = 6
	hedgeWithin       = 20 * time.Millisecond
	redeliverOneIn    = 10
)

// retryPlan is how one write's attempts go, drawn before they start: the
// worker's random source is not for concurrent use, and a burst's writes
// go at once.
type retryPlan struct {
	clients  [maxAttempts]*client.Client // attempt k+1's gateway
	timeouts [maxAttempts]time.Duration  // how long the client waits for attempt k+1's answer
	backoff  [maxAttempts]time.Duration  // the pause before attempt k+1, when it follows an answer
	// hedge, if not 0, sends attempt 2 this long after attempt 1 if
	// attempt 1 has not been answered by then.
	hedge time.Duration
	// redeliver sends an attempt more after the final answer.
	redeliver bool
}

// plan draws a write's retryPlan, its first attempt through first. Each
// retry goes to another gateway or the same, by a coin's toss.
func (w *worker) plan(first *client.Client) retryPlan {
	p := retryPlan{hedge: -1}
	p.clients[0] = first
	for k := range maxAttempts {
		if k > 0 {
			p.clients[k] = p.clients[k-1]
			if len(w.clients) > 1 && w.rnd.IntN(2) == 0 {
				for p.clients[k] == p.clients[k-1] {
					p.clients[k] = w.pick()
				}
			}
		}
		p.timeouts[k] = writeTimeout
		if w.rnd.IntN(shortTimeoutOneIn) == 0 {
			p.timeouts[k] = time.Duration(float64(w.ttl) * (0.25 + 0.75*w.rnd.Float64()))
		}
		p.backoff[k] = time.Duration(20+w.rnd.IntN(80)) * time.Millisecond
	}
	if w.rnd.IntN(hedgeOneIn) == 0 {
		p.hedge = time.Duration(w.rnd.Int64N(int64(hedgeWithin)))
	}
	p.redeliver = w.rnd.IntN(redeliverOneIn) == 0
	return p
}

// answer is what one attempt of a write got back.
type answer struct {
	typ, detail string // as outcome sorts it
	err         error
	status      int // 0: no answer came
	replayed    bool
	digest      string // of the body, when one came whole
}

// final reports whether a settles the write's fate: applied, or refused
// with a 4xx (the key's outcome). No answer, an unknown outcome and a 5xx
// (503 not-applied among them) leave it to a retry with the key.
func (a answer) final() bool {
	return a.typ == check.TypeOK || a.typ == check.TypeFail && a.status < 500
}

// send makes one write under its key as a client that retries does:
// do sends one attempt through a gateway, record records each attempt's
// invoke (typ "invoke") and answer. An answer that leaves the write's fate
// open is retried with the same key, on the gateway the plan says, until
// one is final, maxAttempts were sent or writeBudget is spent; attempts
// overlap when the plan hedges the first, and at the gateway when the
// client gave up on one (a short timeout) that is still being worked on.
// With the plan's redeliver, a write answered for good is sent once more,
// as a job queue that redelivers a job does: its answer must be the
// first, replayed.
func (w *worker) send(p retryPlan, do func(context.Context, *client.Client) error, record func(attempt int, a answer)) {
	deadline := time.Now().Add(writeBudget)
	results := make(chan answer, maxAttempts)
	var wg sync.WaitGroup
	defer wg.Wait()
	next, inFlight := 0, 0
	launch := func() {
		n := next
		next++
		inFlight++
		record(n+1, answer{typ: check.TypeInvoke})
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), min(p.timeouts[n], max(time.Until(deadline), time.Millisecond)))
			defer cancel()
			got := &capture{}
			a := got.answer(do(context.WithValue(ctx, captureKey{}, got), p.clients[n]))
			record(n+1, a)
			results <- a
		})
	}
	launch()
	var hedge <-chan time.Time
	if p.hedge >= 0 {
		hedge = time.After(p.hedge)
	}
	final := false
	for inFlight > 0 {
		select {
		case <-hedge:
			hedge = nil
			launch()
			continue
		case a := <-results:
			inFlight--
			hedge = nil // answered before the hedge: a client would not hedge now
			final = final || a.final()
		}
		if inFlight == 0 && next < maxAttempts && time.Now().Before(deadline) && (!final || p.redeliver && next == 1) {
			time.Sleep(p.backoff[next])
			launch()
		}
	}
}

// capture is what the recording transport saw of one attempt's answer.
type capture struct {
	status   int
	replayed bool
	body     []byte
}

// captureKey carries an attempt's capture in its request's context.
type captureKey struct{}

// answer sorts the attempt's error and adds what c saw.
func (c *capture) answer(err error) answer {
	a := answer{err: err, status: c.status, replayed: c.replayed}
	a.typ, a.detail = outcome(err)
	if c.status != 0 && (a.typ == check.TypeOK || a.typ == check.TypeFail) {
		sum := sha256.Sum256(c.body)
		a.digest = hex.EncodeToString(sum[:8])
	}
	return a
}

// recordingTransport passes requests to base, and for those whose
// context carries a capture, records the status, Idempotent-Replayed and
// the body as the client reads it: the client's Result and ProblemError
// keep neither the bytes nor, for a refusal, the replay. The client sends
// a request again, one after the other, while its answer is lost: the
// capture is of the last, which a final answer is.
type recordingTransport struct{ base http.RoundTripper }

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, capturing := req.Context().Value(captureKey{}).(*capture)
	if capturing {
		*c = capture{}
	}
	resp, err := t.base.RoundTrip(req)
	if capturing && err == nil {
		c.status, c.replayed = resp.StatusCode, resp.Header.Get(client.ReplayedHeader) == "true"
		resp.Body = &teeBody{ReadCloser: resp.Body, c: c}
	}
	return resp, err
}

type teeBody struct {
	io.ReadCloser
	c *capture
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.body = append(b.c.body, p[:n]...)
	return n, err
}

package torture

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// gatewayMaxHold is the max_hold of res under clock faults: six TTLs,
// longer than a worker holds a lease unless a fault holds its writes up
// (a critical section under one TTL, then its writes' answers), and past
// which the nemesis steps the gateways' wall clocks.
func gatewayMaxHold(ttl time.Duration) time.Duration { return 6 * ttl }

// gatewayClockFor bounds how long a gateway's clock stays stepped when no
// reaper revokes a lease by it: three rounds of the reapers (one every
// 2 s) and a TTL.
func (n *nemesis) gatewayClockFor() time.Duration { return 6*time.Second + n.cfg.TTL }

// reapMargin is the authority's: how much longer than its TTL a reaper
// waits for a lease's renewal, on its monotonic clock.
const reapMargin = time.Second

// stepGatewayClocks faults the clock a gateway's authority reads for its
// hold records (serve --unsafe-torture-clock): its wall reading times
// max_hold from the grant, its monotonic reading the reaper's wait for a
// lease's renewal. Each fault sets the gateways' clocks apart by more
// than the bound it moves:
//
//   - gateway-clock-forward: one gateway's wall clock steps past max_hold
//     and two to four TTLs ahead. Its keepalives and its reaper find the
//     holds granted at the true time past max_hold, and revoke them.
//   - gateway-clock-back: one gateway's wall clock steps as far behind.
//     The grants it records look that old to the others, whose reapers
//     revoke those leases.
//   - gateway-clock-fast: one gateway's monotonic clock jumps a TTL, the
//     reaper's margin and one to two TTLs ahead, a clock running fast in
//     one go (and never going back, as no monotonic clock does). Its
//     reaper finds every renewal it saw before the jump unrenewed past its
//     TTL. The reaper times a lease from when it saw its renewal record
//     change, which a live holder's keepalives change several times
//     between two of its rounds: it cuts short the wait of the holders
//     whose renewals stalled (a paused holder, a keepalive lost to a
//     partition), not a renewing one's. It counts once made.
//
// Holders lose leases they were renewing, others take them over while the
// first may still send writes: the fence alone keeps that safe, which is
// the point — no safety property may rest on a gateway's clock. A wall
// clock stays stepped until a gateway whose clock should make it revoke
// did (its count of reaped leases grew), or gatewayClockFor, and steps
// back; a step counts only if a lease was revoked.
func (n *nemesis) stepGatewayClocks(ctx context.Context, kind string) bool {
	if n.gatewayClocks == nil || !n.gatewayClockBusy.CompareAndSwap(false, true) {
		return false
	}
	i := n.rnd.IntN(len(n.gateways))
	page := n.gatewayClocks[i]
	reapers := make([]bool, len(n.gateways)) // the gateways whose reapers should revoke
	far := gatewayMaxHold(n.cfg.TTL) + n.ttls(2, 4)
	var step time.Duration
	switch kind {
	case "gateway-clock-forward":
		step, reapers[i] = far, true
	case "gateway-clock-back":
		step = -far
		for k := range reapers {
			reapers[k] = k != i
		}
	case "gateway-clock-fast":
		_, lag := page.offsets()
		page.setOffsets(0, lag-(n.cfg.TTL+reapMargin+n.ttls(1, 2))) // behind the wall clock by less: ahead
		n.count(kind)
		n.gatewayClockBusy.Store(false)
		return true
	default:
		n.gatewayClockBusy.Store(false)
		return false
	}
	before := n.reapedCounts()
	_, lag := page.offsets()
	page.setOffsets(step, lag)
	n.wg.Go(func() {
		defer n.gatewayClockBusy.Store(false)
		revoked := n.awaitReaped(ctx, reapers, before, n.gatewayClockFor())
		_, lag := page.offsets()
		page.setOffsets(0, lag)
		if revoked {
			n.count(kind)
		} else {
			n.log.Info("a gateway clock fault revoked no lease", "fault", kind)
		}
	})
	return true
}

// awaitReaped waits up to d for a gateway marked in reapers to have
// reaped more leases than before says. A gateway that did not answer
// before counts from its first answer, one restarted meanwhile from 0.
func (n *nemesis) awaitReaped(ctx context.Context, reapers []bool, before []int, d time.Duration) bool {
	base := slices.Clone(before)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for k, now := range n.reapedCounts() {
			switch {
			case !reapers[k] || now < 0:
				continue
			case base[k] < 0:
				base[k] = now
			case now < base[k]:
				base[k] = 0
			}
			if now > base[k] {
				return true
			}
		}
		sleep(ctx, 100*time.Millisecond)
	}
	return false
}

// reapedCounts are the gateways' counts of leases their reapers revoked
// (fencegw_leases_total{event="reaped"}); -1 for one that did not answer.
func (n *nemesis) reapedCounts() []int {
	counts := make([]int, len(n.gateways))
	for k, g := range n.gateways {
		counts[k] = reaped(g.url())
	}
	return counts
}

// reaped reads the count of leases the gateway at url reaped from its
// metrics; -1 if it does not answer.
func reaped(url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	const metric = `fencegw_leases_total{event="reaped"} `
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), metric); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -1
			}
			return int(f)
		}
	}
	return 0 // none reaped yet: the series is not there
}

package torture

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/internal/harness/clockskew"
)

// clockPage is one worker's clock faults, in a page of a file that the
// nemesis and the worker both map: the nemesis steps the worker's wall
// clock or has it suspended, the worker reads the page at every reading
// of its clock. Shared memory and atomic words, rather than a signal or a
// file read, so that the worker's every reading after a change sees it.
//
// Word 0 packs the wall clock's step (high 32 bits) and the monotonic
// clock's lag behind the wall clock (low 32 bits), in milliseconds, so
// one load reads both. Word 1 is a suspend request: suspendNone,
// suspendAsked (by the nemesis), suspendTaken (by the worker, which then
// stops itself). Words 2 and 3 count the worker's recorded views of a
// lease past its deadline on one clock alone (viewPastOnWallOnly,
// viewPastOnMonotonicOnly): how the nemesis learns that a clock fault
// reached a write, not only a stopped process. Word 4 (heldWord) is the
// churn resource a lease-churn worker holds.
type clockPage struct {
	mem []byte
}

const (
	suspendNone = iota
	suspendAsked
	suspendTaken
)

// mapClockPage maps the page at path, creating the file if it is not
// there.
func mapClockPage(path string) (*clockPage, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("torture: clock page: %w", err)
	}
	defer f.Close() // the mapping outlives the descriptor
	size := os.Getpagesize()
	if err := f.Truncate(int64(size)); err != nil {
		return nil, fmt.Errorf("torture: clock page: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("torture: clock page: %w", err)
	}
	return &clockPage{mem: mem}, nil
}

func (p *clockPage) word(i int) *int64 { return (*int64)(unsafe.Pointer(&p.mem[8*i])) }

// offsets returns the wall clock's step and the monotonic clock's lag.
func (p *clockPage) offsets() (step, lag time.Duration) {
	v := atomic.LoadInt64(p.word(0))
	return time.Duration(int32(v>>32)) * time.Millisecond, time.Duration(int32(v)) * time.Millisecond
}

// setOffsets records a step and a lag, each within ±24 days.
func (p *clockPage) setOffsets(step, lag time.Duration) {
	v := int64(int32(step.Milliseconds()))<<32 | int64(uint32(int32(lag.Milliseconds())))
	atomic.StoreInt64(p.word(0), v)
}

// askSuspend asks the worker to suspend itself at its next critical
// section; false if a request is pending already.
func (p *clockPage) askSuspend() bool {
	return atomic.CompareAndSwapInt64(p.word(1), suspendNone, suspendAsked)
}

// takeSuspend is the worker's side: true once per request, and the
// worker must then stop itself.
func (p *clockPage) takeSuspend() bool {
	return atomic.CompareAndSwapInt64(p.word(1), suspendAsked, suspendTaken)
}

// withdrawSuspend takes back a request the worker has not taken: true if
// it was withdrawn, false if the worker took it (and stops, or stopped).
func (p *clockPage) withdrawSuspend() bool {
	return atomic.CompareAndSwapInt64(p.word(1), suspendAsked, suspendNone)
}

// The words counting views past on one clock alone.
const (
	viewPastOnWallOnly      = 2
	viewPastOnMonotonicOnly = 3
)

// countView is the worker's side: one more recorded view of kind w.
func (p *clockPage) countView(w int) { atomic.AddInt64(p.word(w), 1) }

// views returns how many views of kind w the worker has recorded.
func (p *clockPage) views(w int) int64 { return atomic.LoadInt64(p.word(w)) }

// heldWord is 1 + the index of the churn resource a lease-churn worker
// holds a lease on as it comes to its suspendIfAsked: the nemesis, having
// stopped it there, knows whose lease to take after it
// (nemesis_churn.go). 0: none yet.
const heldWord = 4

// setHeld is the worker's side: it holds a lease on churn/r{k}.
func (p *clockPage) setHeld(k int) { atomic.StoreInt64(p.word(heldWord), int64(k)+1) }

// held returns k of the churn/r{k} the worker last said it holds a lease
// on; false if it never did.
func (p *clockPage) held() (int, bool) {
	v := atomic.LoadInt64(p.word(heldWord))
	return int(v - 1), v > 0
}

// suspendDone clears a request the worker took, once it was resumed.
func (p *clockPage) suspendDone() { atomic.StoreInt64(p.word(1), suspendNone) }

func (p *clockPage) close() { _ = syscall.Munmap(p.mem) }

// pageClock is a worker's client.Clock: the real clock, with the page's
// step on its wall reading and its lag on the monotonic one (package
// clockskew: no system call gives one process such readings).
// Its timers are the runtime's, on the real monotonic clock, which did
// count a suspend (the process was stopped, not the machine): they fire
// at once after it, and whatever they check reads this clock.
type pageClock struct{ page *clockPage }

func (c pageClock) Now() time.Time {
	step, lag := c.page.offsets()
	return clockskew.Reading(time.Now(), step, step+lag) // the lag is behind the true time, not the stepped one
}

func (c pageClock) AfterFunc(d time.Duration, f func()) client.Timer { return time.AfterFunc(d, f) }

// GatewayClock is the clock of a gateway's hold records under `fencegw
// torture` (serve --unsafe-torture-clock): the real clock with the step
// of the clock page at path on its wall reading and the page's lag on its
// monotonic reading, as the nemesis sets them. The page stays mapped for
// the life of the process.
func GatewayClock(path string) (func() time.Time, error) {
	if err := clockskew.Check(); err != nil {
		return nil, err
	}
	page, err := mapClockPage(path)
	if err != nil {
		return nil, err
	}
	return pageClock{page}.Now, nil
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/psp"
	"github.com/fencegw/fencegw/examples/internal/storytest"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/tsclient"
)

// worker is the refund worker of another language, run as a process.
type worker struct {
	name string
	// command returns the worker's argv (its flags appended later), the
	// folder to run it in and what its environment needs.
	command func(t *testing.T) (argv []string, dir string, env []string)
}

var workers = []worker{
	{"python", func(t *testing.T) ([]string, string, []string) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Fatal("python3 is not installed: the Python refund worker cannot run (.ci/run installs it)")
		}
		client, err := filepath.Abs("../../clients/python")
		if err != nil {
			t.Fatal(err)
		}
		return []string{"python3", "-u", "refund.py"}, "python", []string{"PYTHONPATH=" + client}
	}},
	{"typescript", func(t *testing.T) ([]string, string, []string) {
		dir := tsclient.BuildDependent(t, "typescript")
		return []string{"node", "build/refund.js"}, dir, nil
	}},
}

// TestRefundTakeoverInEachLanguage is TestTakeover with the Python and
// TypeScript workers as processes, and a real pause: worker A (TTL 2 s)
// claims intent 8842 and asks the provider, whose answer is held back;
// the test freezes A with SIGSTOP, waits for A's lease to expire on the
// gateway, and runs worker B of the same language, which takes over, gets
// the same refund and records it. A is resumed and given its answer: its
// record, sent with the token it holds, is refused by the fence (409
// stale-token, its current_token B's), and nothing of it lands.
func TestRefundTakeoverInEachLanguage(t *testing.T) {
	// One after the other: the gateways share the package's etcd, where
	// both would lock refund/8842.
	for _, w := range workers {
		t.Run(w.name, func(t *testing.T) {
			argv, dir, env := w.command(t)
			takeover(t, argv, dir, env)
		})
	}
}

// report is what a worker printed with --json.
type workerReport struct {
	report
	CurrentToken string `json:"current_token"`
}

func takeover(t *testing.T, argv []string, dir string, env []string) {
	gw := startGateway(t)
	fake, pspURL := storytest.Provider(t)
	held := storytest.HoldFirst(t, fake) // A's refund request
	flags := func(ttl string) []string {
		return append(append([]string(nil), argv...), "--gateway", gw.URL, "--psp", pspURL, "--intent", "8842", "--amount", "2500",
			"--ttl", ttl, "--wait", "10", "--psp-timeout", "60", "--json")
	}

	var outA, errA testenv.Buffer
	a := exec.Command(flags("2")[0], flags("2")[1:]...)
	a.Dir, a.Env, a.Stdout, a.Stderr = dir, append(os.Environ(), env...), &outA, &errA
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	exitedA, waited := make(chan error, 1), make(chan struct{})
	go func() { exitedA <- a.Wait(); close(waited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(a.Process.Pid, syscall.SIGCONT)
		held.Answer()
		_ = a.Process.Kill() // nothing if it has exited
		<-waited
	})
	select {
	case <-held.Arrived():
	case err := <-exitedA:
		t.Fatalf("A exited (%v) before asking the provider:\n%s%s", err, outA.String(), errA.String())
	}

	// The pause: nothing of A runs, its keepalives included.
	if err := syscall.Kill(a.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	observer := client.New(gw.URL)
	if !testenv.WaitFor(storytest.EventTimeout, func() bool {
		st, err := observer.Observe(t.Context(), "refund/8842")
		return err == nil && st.Holder == nil
	}) {
		t.Fatal("A's lease did not expire while A was frozen")
	}

	b := exec.Command(flags("10")[0], flags("10")[1:]...)
	b.Dir, b.Env = dir, append(os.Environ(), env...)
	var errB bytes.Buffer
	b.Stderr = &errB
	out, err := b.Output()
	t.Logf("B: %s%s", errB.String(), out)
	var repB workerReport
	if err != nil || json.Unmarshal(out, &repB) != nil || repB.Outcome != outcomeRefunded || repB.PSPRef == "" {
		t.Fatalf("B: %v, %+v; want refunded", err, repB)
	}
	if got, want := fake.Stats(), (psp.Stats{Charges: 1, Posts: 2}); got != want {
		t.Errorf("provider after B: %+v, want %+v: B asked for A's refund, not a new one", got, want)
	}
	before := readState(t, gw.Pool)
	checkRecorded(t, before, repB.PSPRef, repB.Token)

	// A wakes up with its answer, and sends the record it prepared.
	if err := syscall.Kill(a.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	held.Answer()
	errExit := storytest.Await(t, exitedA, "A to exit")
	t.Logf("A: %s%s", errA.String(), outA.String())
	var repA workerReport
	if err := json.Unmarshal([]byte(outA.String()), &repA); err != nil {
		t.Fatalf("A's report %q: %v", outA.String(), err)
	}
	if errExit == nil || repA.Outcome != "stale-token" || repA.CurrentToken != repB.Token || repA.PSPRef != repB.PSPRef {
		t.Errorf("A: exit %v, %+v; want its record refused as stale (exit 1), the fence at B's %s, one refund %s", errExit, repA, repB.Token, repB.PSPRef)
	}
	if got, want := fake.Stats(), (psp.Stats{Charges: 1, Posts: 2}); got != want {
		t.Errorf("provider after A: %+v, want %+v", got, want)
	}
	if after := readState(t, gw.Pool); after != before {
		t.Errorf("A's refused record changed the state:\n got %+v\nwant %+v", after, before)
	}
}

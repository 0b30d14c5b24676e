package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/tokens"
)

func lockCommand() *cobra.Command {
	var o lockOptions
	cmd := &cobra.Command{
		Use:   "lock [flags] RESOURCE [RESOURCE...] -- CMD [ARGS...]",
		Short: "run CMD holding the lock on RESOURCE, its fencing token in FENCING_TOKEN",
		Long: `Takes the lock on RESOURCE through the gateway, runs CMD with the token in
FENCING_TOKEN (and FENCEGW_LEASE_ID, FENCEGW_RESOURCE, FENCEGW_URL), keeps
the lease alive, and stops CMD's process group (SIGTERM, then SIGKILL after
--grace to what is left of it) as soon as the lease is lost or its local
deadline passes, or when CMD exits leaving some of it running; it releases
the lock and exits once the group is empty. A process that leaves the group
(setsid) is not stopped. CMD must still send its writes with the token: a
paused process can outlive any local check, and only the fence refuses its
late write.

With several resources, all are taken (in canonical order, all or none)
before CMD starts, and CMD is stopped when any lease is lost. Their tokens
are in FENCING_TOKEN_1, FENCING_TOKEN_2, ... (with FENCEGW_RESOURCE_n and
FENCEGW_LEASE_ID_n), numbered in the order given here, for a write such as
Fencing-Token: from="$FENCING_TOKEN_1", to="$FENCING_TOKEN_2".

The token in FENCING_TOKEN is the one granted, for the whole run: the
environment of a running command cannot change. Keepalives bring it
signed again after a key rotation, but the command keeps the first, and
stays valid because fencegw keys retire keeps the key that signed it
while the lease lives (unless forced).

Where the gateway's policy declares clients, the client's bearer token is
read from FENCEGW_BEARER_TOKEN (never a flag: every user of the machine
can read a command line).

A lease kept alive proves that lock lives, not that CMD works: with
--heartbeat-file (CMD touches the file; unchanged for --heartbeat-timeout,
or gone, it is judged wedged) or --health-cmd (a shell command run every
--health-interval; a failure, or no answer within --health-timeout), CMD
is stopped as on a lost lease and the lock released, so the next holder
takes over within that bound.

For an https:// gateway, --tls-ca-file names its CA; one that asks for a
client certificate gets --tls-cert-file and --tls-key-file. A credential
that rotates (a Kubernetes projected service account token) is read from
--bearer-file before every request. The command gets these files'
names too (FENCEGW_TLS_CA_FILE, FENCEGW_TLS_CERT_FILE, FENCEGW_TLS_KEY_FILE,
FENCEGW_BEARER_FILE), as it gets FENCEGW_URL.

A semaphore (a policy resource with permits: N) is held by up to N runs
at once: each holds one permit slot, FENCEGW_PERMIT (1 to N), and
FENCEGW_RESOURCE is the slot's (RESOURCE#PERMIT), whose fence its writes
advance; FENCING_TOKEN names the slot and the writes need nothing else.
--permits N says RESOURCE is such a semaphore, and is refused if the
policy says otherwise.

exit status: CMD's own when it finished while the lease was held;
  3 the lease was lost and CMD was stopped; 4 the resource stayed locked;
  5 the gateway could not be reached or refused; 6 CMD stopped proving it
  works (heartbeat or health command) and was stopped; 2 usage.`,
		Example: `  fencegw lock account/42 -- ./settle.sh
  fencegw lock --ttl 30s --wait 1m account/1 account/2 -- ./transfer.sh
  fencegw lock --permits 4 --wait 5m pool/migrations -- ./migrate-one.sh`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case dash < 1 || dash == len(args):
				return fmt.Errorf("%w: lock: want RESOURCE [RESOURCE...] -- CMD [ARGS...]", errUsage)
			case slices.Contains(args[:dash], ""):
				return fmt.Errorf("%w: lock: an empty RESOURCE", errUsage)
			case o.permits < 0 || o.permits > tokens.MaxPermits:
				return fmt.Errorf("%w: lock: --permits %d: want 1 to %d (leave it out for an exclusive lock)", errUsage, o.permits, tokens.MaxPermits)
			case o.ttl <= 0 || o.ttl > authority.MaxTTL || o.wait < 0 || o.wait > authority.MaxWait || o.grace < 0:
				// A TTL under a second is rounded up to one, as the gateway
				// counts whole seconds.
				return fmt.Errorf("%w: lock: --ttl must be positive and at most %s, --wait 0 to %s, --grace not negative",
					errUsage, authority.MaxTTL, authority.MaxWait)
			}
			return o.live.check()
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			return runLock(cmd.Context(), o, args[:dash], args[dash:])
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.gateway, "gateway", envOr("http://127.0.0.1:8080", "FENCEGW_URL"), "gateway base URL (FENCEGW_URL)")
	showDefault(flags, "gateway", "http://127.0.0.1:8080") // FENCEGW_URL may carry credentials
	flags.DurationVar(&o.ttl, "ttl", 10*time.Second, "lease TTL; renewed every TTL/3")
	flags.DurationVar(&o.wait, "wait", 0, "how long to wait for the current holder")
	flags.IntVar(&o.permits, "permits", 0, "RESOURCE is a semaphore of this many permits, as the gateway's policy says (else refused): hold one permit slot of it")
	flags.DurationVar(&o.grace, "grace", 10*time.Second, "time the command's process group gets between SIGTERM and SIGKILL")
	flags.StringVar(&o.live.heartbeatFile, "heartbeat-file", "", "renew only while the job touches this file (it must exist at start): unchanged for --heartbeat-timeout, or gone, and the job is stopped as on a lost lease (exit 6)")
	flags.DurationVar(&o.live.heartbeatTimeout, "heartbeat-timeout", 0, "how long the heartbeat file may go unchanged")
	flags.StringVar(&o.live.healthCmd, "health-cmd", "", "renew only while this shell command succeeds, run every --health-interval: a failure, or no answer within --health-timeout, and the job is stopped as on a lost lease (exit 6)")
	flags.DurationVar(&o.live.healthInterval, "health-interval", 10*time.Second, "how often the health command runs")
	flags.DurationVar(&o.live.healthTimeout, "health-timeout", 5*time.Second, "how long one run of the health command may take")
	o.creds.bind(flags)
	return cmd
}

// lockOptions are the flags of `fencegw lock`.
type lockOptions struct {
	gateway          string
	ttl, wait, grace time.Duration
	permits          int
	live             liveness
	creds            lockCredentials
}

// Exit statuses of `fencegw lock` other than the command's own.
const (
	exitLeaseLost   = 3
	exitLocked      = 4
	exitUnavailable = 5
	exitWedged      = 6 // the job stopped proving it works (liveness)
)

// exitError carries an exit status out of runLock.
type exitError struct {
	code int
	err  error
	// quiet: nothing is left to say. Either the status is the command's
	// own, passed through (as with env or timeout, nothing is added to
	// what the command said), or lock told why as it stopped the command,
	// when it mattered, and main would only say it again.
	quiet bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// runLock serves `fencegw lock`: it runs command holding the locks on
// resources.
func runLock(ctx context.Context, o lockOptions, resources, command []string) error {
	resource := strings.Join(resources, ", ")

	bearer := os.Getenv("FENCEGW_BEARER_TOKEN")
	opts, err := o.creds.options(bearer)
	if err != nil {
		return err
	}
	// A renewal that fails is the danger to come: said while there is
	// still time, not only once the lease is gone.
	opts = append(opts, client.WithRenewFailures(func(f client.RenewFailure) {
		fmt.Fprintf(os.Stderr, "fencegw lock: renewing %s failed (%v): the lease ends in %s unless a renewal gets through\n",
			f.Resource, f.Err, f.Left.Round(time.Millisecond))
	}))
	c := client.New(o.gateway, opts...)
	set, err := c.AcquireAll(ctx, resources, client.AcquireOptions{TTL: o.ttl, Wait: o.wait, Permits: o.permits})
	var problem *client.ProblemError
	switch {
	case errors.Is(err, client.ErrBadOptions):
		return fmt.Errorf("%w: lock: %w", errUsage, err)
	case errors.Is(err, client.ErrLocked):
		return &exitError{code: exitLocked, err: err}
	case errors.As(err, &problem) && problem.Status == http.StatusUnauthorized:
		return &exitError{code: exitUnavailable, err: fmt.Errorf("%w (%s)", err, o.creds.unauthorizedHint(bearer))}
	case err != nil:
		return &exitError{code: exitUnavailable, err: err}
	}
	// Release on a context that outlives ctx: after Ctrl-C we still hand
	// the locks on at once instead of letting them expire.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = set.Release(rctx)
	}()

	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(append(os.Environ(), "FENCEGW_URL="+o.gateway), o.creds.env()...)
	if len(resources) == 1 {
		lease := set.Lease(resources[0])
		cmd.Env = append(cmd.Env, "FENCING_TOKEN="+lease.Token(), "FENCEGW_LEASE_ID="+lease.ID(), "FENCEGW_RESOURCE="+lease.Resource())
		if lease.Permit() > 0 {
			cmd.Env = append(cmd.Env, "FENCEGW_PERMIT="+strconv.Itoa(lease.Permit()))
		}
	} else {
		for i, r := range resources {
			lease, n := set.Lease(r), strconv.Itoa(i+1)
			cmd.Env = append(cmd.Env, "FENCING_TOKEN_"+n+"="+lease.Token(), "FENCEGW_LEASE_ID_"+n+"="+lease.ID(), "FENCEGW_RESOURCE_"+n+"="+lease.Resource())
			if lease.Permit() > 0 {
				cmd.Env = append(cmd.Env, "FENCEGW_PERMIT_"+n+"="+strconv.Itoa(lease.Permit()))
			}
		}
	}
	// Orphans of the command's group become ours to reap while it runs
	// (processGroup.empty).
	restore := becomeSubreaper()
	defer restore()
	g, err := startGroup(cmd)
	if err != nil {
		// As a shell says it: 127 no such command, 126 not runnable.
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		return &exitError{code: code, err: fmt.Errorf("lock: cannot run %s: %w", command[0], err)}
	}

	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	wedged := o.live.watch(watchCtx)

	// Every case returns only once the group is empty: the locks are
	// released, and our status reported, after the last process the
	// command started is gone.
	select {
	case <-g.done:
		if !g.empty() {
			fmt.Fprintf(os.Stderr, "fencegw lock: %s exited, leaving processes in its group: stopping them\n", command[0])
			_ = g.stop(o.grace)
		}
		// A command that ends just as the process wakes from a pause
		// may beat the keepalive to the news: the deadline decides.
		if lost := leaseLost(set); lost != nil {
			return &exitError{code: exitLeaseLost, err: fmt.Errorf("lock: the lease on %s was lost while %s ran (%w); it exited: %v", resource, command[0], lost, g.err)}
		}
		return childExit(g.err)
	case <-ctx.Done():
		// Our own SIGINT/SIGTERM: pass it on and wait for the command.
		return childExit(g.stop(o.grace))
	case <-set.Done():
		fmt.Fprintf(os.Stderr, "fencegw lock: lost %s (%v): stopping %s\n", resource, set.Err(), command[0])
		_ = g.stop(o.grace)
		return &exitError{code: exitLeaseLost, err: fmt.Errorf("lock: lease on %s lost: %w", resource, set.Err()), quiet: true}
	case err := <-wedged:
		// Stop it as on a lost lease, then release (deferred): the next
		// holder takes over at once, and nothing of this job is left to
		// write.
		fmt.Fprintf(os.Stderr, "fencegw: %v: stopping %s and releasing %s\n", err, command[0], resource)
		_ = g.stop(o.grace)
		return &exitError{code: exitWedged, err: err, quiet: true}
	}
}

// leaseLost reports why a lease of the set is gone or past its local
// deadline.
func leaseLost(set *client.LeaseSet) error {
	select {
	case <-set.Done():
		return set.Err()
	default:
	}
	for _, l := range set.Leases() {
		if time.Now().After(l.Deadline()) {
			return client.ErrLeaseExpired
		}
	}
	return nil
}

// childExit turns the command's end into ours: same status.
func childExit(err error) error {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		code := ee.ExitCode()
		if code < 0 {
			code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		}
		return &exitError{code: code, err: fmt.Errorf("lock: command exited with status %d", code), quiet: true}
	}
	return &exitError{code: 1, err: err}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/client"
)

// operatorOptions are the flags of the operator's verbs, which go through
// the gateway's admin API as an operator's client (operations ["*"]).
type operatorOptions struct {
	gateway      string
	creds        lockCredentials
	reason       string
	dryRun, json bool
	keepFence    bool // lease revoke only
}

func (o *operatorOptions) bind(flags *pflag.FlagSet) {
	flags.StringVar(&o.gateway, "gateway", envOr("http://127.0.0.1:8080", "FENCEGW_URL"), "gateway base URL (FENCEGW_URL)")
	showDefault(flags, "gateway", "http://127.0.0.1:8080") // FENCEGW_URL may carry credentials
	flags.StringVar(&o.reason, "reason", "", "why, in one line: recorded in the lock history with this client's name (required)")
	flags.BoolVar(&o.dryRun, "dry-run", false, "show what would happen, change nothing")
	flags.BoolVar(&o.json, "json", false, "print the gateway's answer as one JSON document")
	o.creds.bind(flags)
}

// client checks the options and returns the gateway's client.
func (o *operatorOptions) client(verb string) (*client.Client, error) {
	if strings.TrimSpace(o.reason) == "" {
		return nil, fmt.Errorf("%w: %s: --reason is required: say why (it is recorded in the lock history with who asked)", errUsage, verb)
	}
	opts, err := o.creds.options(os.Getenv("FENCEGW_BEARER_TOKEN"))
	if err != nil {
		return nil, err
	}
	return client.New(o.gateway, opts...), nil
}

const operatorTimeout = 30 * time.Second

func leaseCommand() *cobra.Command {
	var o operatorOptions
	revoke := &cobra.Command{
		Use:   "revoke RESOURCE|LEASE --reason WHY",
		Short: "revoke the lease holding RESOURCE's lock, or lease LEASE, whoever owns it",
		Long: `Revokes, through the gateway, the lease that holds RESOURCE's lock, or
the lease LEASE (an ID in lower-case hex, holding or waiting), whoever owns
it: the lock passes to the next in line, after the resource's lock-delay
(its holder did not say it was done, and may still run). The holder is cut
off too: its fence first moves past its token, as fencegw fence advance
does, so its next write is refused (409 stale-token) while the next holder
writes as usual. --keep-fence leaves the fence where it is: the revoked
holder then writes until the next holder has written. Recorded in the lock
history with this client's name and --reason. Needs an operator's client:
operations ["*"] in the policy. An argument that is a lease ID is taken as
one.`,
		Example: `  fencegw lease revoke account/acct-7 --reason "holder wedged, INC-4411" --gateway https://gw.internal:8443
  fencegw lease revoke 694d7a3b1c2e0f11 --reason "stray lease" --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRevoke(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	o.bind(revoke.Flags())
	revoke.Flags().BoolVar(&o.keepFence, "keep-fence", false, "leave the holder's fence as it is: the revoked holder writes until its successor has written")
	cmd := verbGroup("lease", "operate on leases through the gateway (an operator's client)", "", revoke)
	cmd.Example = revoke.Example
	return cmd
}

func fenceCommand() *cobra.Command {
	var o operatorOptions
	advance := &cobra.Command{
		Use:   "advance RESOURCE --reason WHY",
		Short: "cut off every token of RESOURCE issued so far: its holder is refused at its next write",
		Long: `Moves RESOURCE's fence, through the gateway, past every token issued so far:
the current holder is refused at its next write (409 stale-token), while the
leases waiting in line, and every later grant, write as usual (the rule is
in docs/concepts.md, "Fence advance"). The holder keeps its lease: revoke
it too (fencegw lease revoke) to pass the lock on. Recorded in the lock
history with this client's name and --reason. Needs an operator's client:
operations ["*"] in the policy.`,
		Example: `  fencegw fence advance account/acct-7 --reason "holder known bad, INC-4411" --gateway https://gw.internal:8443`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAdvance(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	o.bind(advance.Flags())
	cmd := verbGroup("fence", "operate on fences through the gateway (an operator's client)", "", advance)
	cmd.Example = advance.Example
	return cmd
}

// runRevoke serves `fencegw lease revoke`.
func runRevoke(ctx context.Context, o operatorOptions, target string, out io.Writer) error {
	c, err := o.client("lease revoke")
	if err != nil {
		return err
	}
	req := client.RevokeRequest{Resource: target, Reason: o.reason, DryRun: o.dryRun, KeepFence: o.keepFence}
	if _, err := authority.ParseLeaseID(target); err == nil {
		req.Resource, req.LeaseID = "", target
	}
	ctx, cancel := context.WithTimeout(ctx, operatorTimeout)
	defer cancel()
	rev, err := c.Revoke(ctx, req)
	if err != nil {
		return fmt.Errorf("lease revoke: %w", err)
	}
	if o.json {
		return json.NewEncoder(out).Encode(rev)
	}
	_, err = fmt.Fprintln(out, describeRevocation(rev))
	return err
}

// describeRevocation is the text line of `fencegw lease revoke`.
func describeRevocation(rev *client.Revocation) string {
	l := rev.Lease
	what := "revoked"
	if rev.DryRun {
		what = "would revoke"
	}
	if l.Token == "" { // in a semaphore's line, no slot yet
		return fmt.Sprintf("%s lease %s of %s, waiting for a permit of %s", what, l.LeaseID, clientOrAnyone(l.Client), l.Resource)
	}
	state := "holding"
	if l.Waiting {
		state = "waiting for"
	}
	line := fmt.Sprintf("%s lease %s of %s, %s %s with token %s", what, l.LeaseID, clientOrAnyone(l.Client), state, l.Resource, l.Token)
	switch f := rev.Fence; {
	case l.Waiting:
	case f == nil:
		line += "; its fence is left as it is (--keep-fence): the token writes until the next holder has written"
	case f.Advanced && rev.DryRun:
		line += fmt.Sprintf("; would advance its fence from %s to %s: its next write refused", fenceOrNone(f.Before), f.Fence)
	case f.Advanced:
		line += fmt.Sprintf("; its fence advanced from %s to %s: its next write is refused", fenceOrNone(f.Before), f.Fence)
	default:
		line += fmt.Sprintf("; its fence is at %s already, past the token", f.Before)
	}
	return line
}

// runAdvance serves `fencegw fence advance`.
func runAdvance(ctx context.Context, o operatorOptions, resource string, out io.Writer) error {
	c, err := o.client("fence advance")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, operatorTimeout)
	defer cancel()
	adv, err := c.AdvanceFence(ctx, client.AdvanceRequest{Resource: resource, Reason: o.reason, DryRun: o.dryRun})
	if err != nil {
		return fmt.Errorf("fence advance: %w", err)
	}
	if o.json {
		return json.NewEncoder(out).Encode(adv)
	}
	_, err = fmt.Fprintln(out, describeAdvance(adv))
	return err
}

// describeAdvance is the text line of `fencegw fence advance`.
func describeAdvance(adv *client.FenceAdvance) string {
	if !adv.Advanced {
		return fmt.Sprintf("the fence of %s is at %s, past every token issued already: nothing changed", adv.Resource, adv.Before)
	}
	what, refused := "advanced", "is refused"
	if adv.DryRun {
		what, refused = "would advance", "would be refused"
	}
	holder := "nobody holds the lock"
	if adv.Holder != "" {
		holder = fmt.Sprintf("the holder's token %s %s from its next write", adv.Holder, refused)
	}
	waiting := fmt.Sprintf("the %d leases waiting write once granted", adv.Waiting)
	switch adv.Waiting {
	case 0:
		waiting = "no lease waits"
	case 1:
		waiting = "the lease waiting writes once granted"
	}
	return fmt.Sprintf("%s the fence of %s from %s to %s: %s; %s", what, adv.Resource, fenceOrNone(adv.Before), adv.Fence, holder, waiting)
}

// clientOrAnyone names a lease's owner in a sentence.
func clientOrAnyone(name string) string {
	if name == "" {
		return "no client (authentication off)"
	}
	return "client " + name
}

// fenceOrNone is a fence found, as the answer gave it: empty (null) for a
// resource never written.
func fenceOrNone(fence string) string {
	if fence == "" {
		return "none (never written)"
	}
	return fence
}

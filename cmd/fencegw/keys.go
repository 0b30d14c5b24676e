package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/authority"
)

func keysCommand() *cobra.Command {
	var o keysOptions
	verb := func(name, short string) *cobra.Command {
		return &cobra.Command{
			Use: name, Short: short,
			Example: "  fencegw keys " + name + " --etcd e1:2379,e2:2379,e3:2379",
			Args:    noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return etcdError("keys", o.cfg.EtcdEndpoints, runKeys(cmd.Context(), o, name, cmd.OutOrStdout()))
			},
		}
	}
	rotate := verb("rotate", "add a key that signs after --sign-after; the older keys still verify")
	rotate.Flags().DurationVar(&o.signAfter, "sign-after", authority.DefaultSignAfter, "how long the new key waits before it signs")
	retire := verb("retire", "delete all but the newest --keep keys: their tokens are refused from then on")
	retire.Flags().IntVar(&o.keep, "keep", 1, "how many of the newest keys to keep")
	cmd := verbGroup("keys", "list, rotate or retire the keys that sign fencing tokens",
		`The keys that sign fencing tokens live in etcd (created on first use); every
gateway loads them from there. list shows the keys' IDs, never their bytes.
Rotating without refusing a token:

  fencegw keys rotate      a new key, known to every gateway at its next
                           authority check, signs after --sign-after (10s)
  ... wait longer than the longest lease TTL, so that every token signed
      by the old key has expired or been renewed under the new one ...
  fencegw keys retire      delete all but the newest --keep (1) keys: their
                           tokens are refused from then on`,
		verb("list", "list the keys: IDs, revisions, when each signs"), rotate, retire)
	cmd.Example = `  fencegw keys rotate --etcd e1:2379,e2:2379,e3:2379
  fencegw keys list --json`
	o.cfg.bindBackends(cmd, cmd.PersistentFlags(), backends{etcd: true})
	cmd.PersistentFlags().BoolVar(&o.asJSON, "json", false, "print the keys as one JSON document")
	return cmd
}

// keysOptions are the flags of `fencegw keys` and its verbs.
type keysOptions struct {
	cfg       serveConfig
	signAfter time.Duration
	keep      int
	asJSON    bool
}

// runKeys serves `fencegw keys list|rotate|retire`.
func runKeys(ctx context.Context, o keysOptions, action string, out io.Writer) error {
	switch {
	case len(o.cfg.EtcdEndpoints) == 0:
		return fmt.Errorf("%w: keys: needs --etcd", errUsage)
	case o.signAfter < 0:
		return fmt.Errorf("%w: keys rotate: --sign-after must not be negative", errUsage)
	case action == "retire" && o.keep < 1:
		return fmt.Errorf("%w: keys retire: --keep must be at least 1: the newest key signs", errUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cli, err := dialEtcd(o.cfg.EtcdEndpoints)
	if err != nil {
		return fmt.Errorf("keys: etcd: %w", err)
	}
	defer cli.Close()
	auth := authority.NewEtcd(cli)
	switch action {
	case "rotate":
		id, err := auth.RotateKey(ctx, o.signAfter)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "keys: key %s signs from %s on; retire the old ones once every lease granted before then has ended\n", id, time.Now().Add(o.signAfter).UTC().Format(time.RFC3339))
	case "retire":
		retired, err := auth.RetireKeys(ctx, o.keep)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "keys: retired %d key(s): tokens they signed are refused from now on\n", len(retired))
	}
	infos, err := auth.Keys(ctx)
	if err != nil {
		return err
	}
	if o.asJSON {
		return json.NewEncoder(out).Encode(map[string]any{"keys": infos})
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED AT REVISION\tSIGNS AFTER\tSIGNING")
	for _, k := range infos {
		after := "-"
		if !k.SignAfter.IsZero() {
			after = k.SignAfter.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%t\n", k.ID, k.Revision, after, k.Signing)
	}
	return tw.Flush()
}

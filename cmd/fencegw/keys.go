package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencegw/fencegw/authority"
)

const keysUsage = `usage: fencegw keys [--etcd ENDPOINTS] [--json] list | rotate [--sign-after D] | retire [--keep N]

The keys that sign fencing tokens live in etcd (created on first use); every
gateway loads them from there. Rotating without refusing a token:

  fencegw keys rotate      a new key, known to every gateway at its next
                           authority check, signs after --sign-after (10s)
  ... wait longer than the longest lease TTL, so that every token signed
      by the old key has expired or been renewed under the new one ...
  fencegw keys retire      delete all but the newest --keep (1) keys: their
                           tokens are refused from then on

list shows the keys' IDs, never their bytes.`

// runKeys serves `fencegw keys list|rotate|retire`.
func runKeys(ctx context.Context, args []string, out io.Writer) error {
	var cfg serveConfig
	fs := flag.NewFlagSet("keys", flag.ContinueOnError)
	fs.Func("etcd", "comma-separated etcd endpoints (FENCEGW_ETCD_ENDPOINTS)", func(v string) error {
		cfg.EtcdEndpoints = strings.Split(v, ",")
		return nil
	})
	signAfter := fs.Duration("sign-after", authority.DefaultSignAfter, "rotate: how long the new key waits before it signs")
	keep := fs.Int("keep", 1, "retire: how many of the newest keys to keep")
	asJSON := fs.Bool("json", false, "print one JSON document")
	fs.Usage = func() { fmt.Fprintln(fs.Output(), keysUsage); fs.PrintDefaults() }
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if len(cfg.EtcdEndpoints) == 0 {
		if v := os.Getenv("FENCEGW_ETCD_ENDPOINTS"); v != "" {
			cfg.EtcdEndpoints = strings.Split(v, ",")
		}
	}
	switch {
	case fs.NArg() != 1 || (fs.Arg(0) != "list" && fs.Arg(0) != "rotate" && fs.Arg(0) != "retire"):
		return fmt.Errorf("%w: keys: want list, rotate or retire", errUsage)
	case len(cfg.EtcdEndpoints) == 0:
		return fmt.Errorf("%w: keys: needs --etcd", errUsage)
	case *signAfter < 0 || *keep < 1:
		return fmt.Errorf("%w: keys: --sign-after must not be negative and --keep at least 1", errUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cli, err := dialEtcd(cfg.EtcdEndpoints)
	if err != nil {
		return fmt.Errorf("keys: etcd: %w", err)
	}
	defer cli.Close()
	auth := authority.NewEtcd(cli)
	switch fs.Arg(0) {
	case "rotate":
		id, err := auth.RotateKey(ctx, *signAfter)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "keys: key %s signs from %s on; retire the old ones once every lease granted before then has ended\n", id, time.Now().Add(*signAfter).UTC().Format(time.RFC3339))
	case "retire":
		retired, err := auth.RetireKeys(ctx, *keep)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "keys: retired %d key(s): tokens they signed are refused from now on\n", len(retired))
	}
	infos, err := auth.Keys(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
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

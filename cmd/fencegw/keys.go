package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
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
				return etcdError("keys", o.cfg, runKeys(cmd.Context(), o, name, cmd.OutOrStdout()))
			},
		}
	}
	rotate := verb("rotate", "add a key that signs after --sign-after; the older keys still verify")
	rotate.Flags().DurationVar(&o.signAfter, "sign-after", authority.DefaultSignAfter, "how long the new key waits before it signs")
	retire := verb("retire", "retire all but the newest --keep keys, except those live leases may hold tokens of")
	retire.Long = `Retires every key but the newest --keep, except a key a live lease may
still hold a token of: the key that signed the token a live lease was
granted with, and every newer one (a keepalive may have signed the token
again with it). Those are kept, named with the leases that hold them back
and what is left of their TTL, and the command exits 1; the others are
retired all the same. The key that signs now is always kept.

A retired key never signs nor validates again: a token it signed is
refused (403 token-retired). It stays in etcd, under
/fencegw/retired-token-keys/, only so that such a refusal is named as
what it is.

--dry-run decides and prints the same (with --force, what --force would
do), and retires nothing. --force retires the keys live leases hold back
too: their tokens are refused from then on, except the tokens a keepalive
has signed again under a newer key (the Go client's Lease writes with
those; the FENCING_TOKEN fencegw lock gave a running command is the one
granted, and is refused).`
	retire.Example = "  fencegw keys retire --dry-run --etcd e1:2379\n  fencegw keys retire --etcd e1:2379"
	retire.Flags().IntVar(&o.keep, "keep", 1, "how many of the newest keys to keep")
	retire.Flags().BoolVar(&o.force, "force", false, "retire keys live leases may hold tokens of: refuses those tokens")
	retire.Flags().BoolVar(&o.dryRun, "dry-run", false, "print what would be retired and why, retire nothing")
	rewrap := verb("rewrap", "seal every key under the newest KEK of --token-kek-file: keys in clear, keys under an older KEK")
	rewrap.Long = `Seals every signing key, in service and retired, under the newest KEK of
--token-kek-file (its last line): a key stored in clear by an earlier
fencegw, and a key sealed under an older KEK the file still holds. A key
already under the newest is left alone, so it may run again; a key no KEK
of the file opens is left as it was, named, and the command exits 1. The
keys' bytes do not change: every token stays valid. Used to move a
deployment to sealed keys and to rotate the KEK (docs/operations/keys.md).`
	cmd := verbGroup("keys", "list, rotate or retire the keys that sign fencing tokens",
		`The keys that sign fencing tokens live in etcd (a gateway creates the first
when it first needs one); every gateway loads them from there. list shows
the keys' IDs, never their bytes, and writes nothing.
Rotating without refusing a token:

  fencegw keys rotate      a new key, known to every gateway at its next
                           authority check, signs after --sign-after (10s);
                           each keepalive from then on signs the lease's
                           token again with it
  fencegw keys retire      retire all but the newest --keep (1) keys, except
                           those a live lease may hold a token of; run it
                           again once those leases have ended (--dry-run
                           says which and how long they have left)`,
		verb("list", "list the keys: IDs, revisions, when each signs, the KEK each is sealed under, the retired ones"), rotate, retire, rewrap)
	cmd.Example = `  fencegw keys rotate --etcd e1:2379,e2:2379,e3:2379
  fencegw keys retire --dry-run --etcd e1:2379,e2:2379,e3:2379
  fencegw keys list --json`
	o.cfg.bindBackends(cmd, cmd.PersistentFlags(), backends{etcd: true})
	o.cfg.KEK.bind(cmd, cmd.PersistentFlags())
	cmd.PersistentFlags().BoolVar(&o.asJSON, "json", false, "print one JSON document on stdout, and nothing else")
	return cmd
}

// keysOptions are the flags of `fencegw keys` and its verbs.
type keysOptions struct {
	cfg           serveConfig
	signAfter     time.Duration
	keep          int
	force, dryRun bool
	asJSON        bool
}

// keysDoc is the --json document: the keys after the command, and for
// retire its decisions.
type keysDoc struct {
	Keys        []authority.KeyInfo       `json:"keys"`
	RetiredKeys []authority.KeyInfo       `json:"retired_keys"`
	DryRun      bool                      `json:"dry_run,omitempty"`
	Retirement  []authority.KeyRetirement `json:"retirement,omitzero"`
	Rewrap      []authority.KeyRewrap     `json:"rewrap,omitzero"`
	KEKs        []string                  `json:"keks"` // --token-kek-file's KEK IDs, newest first
}

// runKeys serves `fencegw keys list|rotate|retire|rewrap`.
func runKeys(ctx context.Context, o keysOptions, action string, out io.Writer) error {
	switch {
	case len(o.cfg.EtcdEndpoints) == 0:
		return fmt.Errorf("%w: keys: needs --etcd", errUsage)
	case o.signAfter < 0:
		return fmt.Errorf("%w: keys rotate: --sign-after must not be negative", errUsage)
	case action == "retire" && o.keep < 1:
		return fmt.Errorf("%w: keys retire: --keep must be at least 1: the newest key signs", errUsage)
	}
	keks, err := o.cfg.KEK.keks(nil, nil)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cli, err := dialEtcd(ctx, o.cfg, "keys")
	if err != nil {
		return err
	}
	defer cli.Close()
	auth := authority.NewEtcd(cli, keks)
	if o.cfg.KEK.ReadClear {
		auth.ReadClearKeys()
	}
	note := func(format string, args ...any) {
		if !o.asJSON { // --json: the document is the whole answer
			fmt.Fprintf(os.Stderr, format, args...)
		}
	}
	doc := keysDoc{DryRun: o.dryRun, KEKs: keks.Current().IDs()}
	var kept error // a key kept for a live lease, or left unsealed: reported after the keys are shown
	switch action {
	case "rotate":
		id, err := auth.RotateKey(ctx, o.signAfter)
		if err != nil {
			return err
		}
		note("keys: key %s signs from %s on; keepalives sign their leases' tokens with it from then; retire the old ones once their leases have ended (keys retire --dry-run says)\n",
			id, time.Now().Add(o.signAfter).UTC().Format(time.RFC3339))
	case "retire":
		doc.Retirement, err = auth.RetireKeys(ctx, authority.RetireOptions{Keep: o.keep, Force: o.force, DryRun: o.dryRun})
		if err != nil && !errors.Is(err, authority.ErrKeyInUse) {
			return err
		}
		kept = err
		if doc.Retirement == nil {
			doc.Retirement = []authority.KeyRetirement{}
		}
	case "rewrap":
		doc.Rewrap, err = auth.RewrapKeys(ctx)
		if err != nil && !errors.Is(err, authority.ErrKeysSealed) {
			return err
		}
		kept = err
	}
	if doc.Keys, err = auth.Keys(ctx); err != nil {
		return err
	}
	if doc.RetiredKeys, err = auth.RetiredKeys(ctx); err != nil {
		return err
	}
	if o.asJSON {
		if doc.Keys == nil { // [], not null: no keys yet
			doc.Keys = []authority.KeyInfo{}
		}
		if doc.RetiredKeys == nil {
			doc.RetiredKeys = []authority.KeyInfo{}
		}
		if err := json.NewEncoder(out).Encode(doc); err != nil {
			return err
		}
		return kept
	}
	if action == "retire" {
		printRetirement(out, doc.Retirement, o.dryRun)
	}
	if action == "rewrap" {
		printRewrap(out, doc.Rewrap)
	}
	if len(doc.Keys) == 0 && len(doc.RetiredKeys) == 0 {
		// list writes nothing, not even the first key.
		_, err := fmt.Fprintln(out, noKeysYet)
		return err
	}
	fmt.Fprintf(out, "--token-kek-file: KEK %s (newest, seals new keys)", doc.KEKs[0])
	for _, id := range doc.KEKs[1:] {
		fmt.Fprintf(out, ", %s", id)
	}
	fmt.Fprintln(out)
	if err := printKeys(out, doc.Keys, doc.RetiredKeys); err != nil {
		return err
	}
	return kept
}

// noKeysYet is what keys list says of a cluster without signing keys.
const noKeysYet = `no signing keys yet: a gateway (fencegw serve, fencegw dev) creates the first
when it first grants a lease or checks a signed token; fencegw keys rotate
creates one now`

// printRetirement prints retire's decisions, key by key, with the leases
// that held a key back.
func printRetirement(out io.Writer, plan []authority.KeyRetirement, dryRun bool) {
	if len(plan) == 0 {
		fmt.Fprintln(out, "nothing to retire: every key is among the newest --keep, or signs now")
	}
	for _, d := range plan {
		verb := "kept"
		if d.Retired {
			verb = "retired"
		}
		if dryRun {
			verb = "would be " + verb
		}
		fmt.Fprintf(out, "%s %s: %s\n", verb, d.ID, d.Reason)
		for _, l := range d.Leases {
			line := "  lease " + l.ID
			if l.Resource != "" {
				line += " on " + l.Resource + ", granted under key " + l.SignedBy
			} else {
				line += ", granted before signers were recorded: it may hold any key's token"
			}
			if l.TTLSeconds > 0 {
				line += fmt.Sprintf(", %ds left unless renewed", l.TTLSeconds)
			}
			fmt.Fprintln(out, line)
		}
		if more := d.LiveLeases - len(d.Leases); more > 0 {
			fmt.Fprintf(out, "  and %d more\n", more)
		}
	}
	fmt.Fprintln(out)
}

// printRewrap prints rewrap's account, key by key.
func printRewrap(out io.Writer, done []authority.KeyRewrap) {
	for _, r := range done {
		from := "in clear"
		if r.From != "" {
			from = "under KEK " + r.From
		}
		switch {
		case r.Error != "":
			fmt.Fprintf(out, "left as it was %s: %s (%s)\n", keyNumberText(r.ID), r.Error, from)
		case r.From == r.To:
			fmt.Fprintf(out, "already sealed %s under KEK %s\n", keyNumberText(r.ID), r.To)
		default:
			fmt.Fprintf(out, "sealed %s under KEK %s (was %s)\n", keyNumberText(r.ID), r.To, from)
		}
	}
	fmt.Fprintln(out)
}

// printKeys prints the keys in service, then the retired ones.
func printKeys(out io.Writer, keys, retired []authority.KeyInfo) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tSIGNS AFTER\tSIGNING\tRETIRED AT\tSEALED UNDER\tETCD REVISION")
	date := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, k := range append(keys, retired...) {
		sealed := k.SealedBy
		if sealed == "" {
			sealed = "clear"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\t%d\n", keyNumberText(k.ID), date(k.Created), date(k.SignAfter), k.Signing, date(k.RetiredAt), sealed, k.Revision)
	}
	return tw.Flush()
}

// keyNumberText is a key ID as people read it: its number, without the
// zeros that make IDs sort in etcd (the JSON keeps the ID).
func keyNumberText(id string) string {
	if t := strings.TrimLeft(id, "0"); t != "" {
		return t
	}
	return id
}

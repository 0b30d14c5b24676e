package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/tokens"
)

func inspectCommand() *cobra.Command {
	var o inspectOptions
	cmd := &cobra.Command{
		Use:   "inspect --database-url URL --etcd ENDPOINTS [flags]",
		Short: "show fences, locks held and their waiters, refused writes, bypasses",
		Long: `Shows, read-only: the fences most recently advanced, the locks held with
their remaining TTL and waiters, the newest refused writes, and the newest
audited bypasses of the guard triggers (which --resource does not filter:
a bypass has no resource). --history RESOURCE shows instead that
resource's lock history (grants, releases, expiries, revokes, lock-delays,
fence advances: who, when, with which token), and its holder now. Every
mode asks etcd (at 127.0.0.1:2379 unless --etcd or FENCEGW_ETCD says
otherwise) and exits 1 when etcd does not answer, after printing what
PostgreSQL holds.`,
		Example: `  fencegw inspect --database-url "$DATABASE_URL" --etcd 127.0.0.1:2379 --resource account/
  fencegw inspect --database-url "$DATABASE_URL" --etcd 127.0.0.1:2379 --json | jq .rejections
  fencegw inspect --database-url "$DATABASE_URL" --etcd 127.0.0.1:2379 --history account/acct-7 --since 2026-12-01T14:00:00Z --limit 100`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.history != "" {
				return etcdError("inspect", o.cfg, runInspectHistory(cmd.Context(), o, cmd.OutOrStdout()))
			}
			if o.since != "" {
				return fmt.Errorf("%w: inspect: --since goes with --history RESOURCE", errUsage)
			}
			return etcdError("inspect", o.cfg, runInspect(cmd.Context(), o, cmd.OutOrStdout()))
		},
	}
	fs := cmd.Flags()
	o.cfg.bindBackends(cmd, fs, databaseAndEtcd)
	fs.StringVar(&o.prefix, "resource", "", "show only resources that start with this")
	fs.IntVar(&o.limit, "limit", 20, "rows per section, 1 to 1000")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON document")
	fs.StringVar(&o.history, "history", "", "show this resource's lock history instead")
	fs.StringVar(&o.since, "since", "", "with --history: events from this time (RFC 3339) or this long ago (90m) on")
	return cmd
}

// inspectOptions are the flags of `fencegw inspect`.
type inspectOptions struct {
	cfg    serveConfig
	prefix string
	limit  int
	asJSON bool
	// history names the resource whose lock history to show; since
	// starts it.
	history, since string
}

// inspection is what `fencegw inspect` shows.
type inspection struct {
	Epoch    int64            `json:"epoch"`
	Revision int64            `json:"etcd_revision"`
	Fences   []fence.FenceRow `json:"fences"`
	Locks    []lockRow        `json:"locks"`
	// LocksTruncated says there were more locks than shown.
	LocksTruncated bool `json:"locks_truncated,omitempty"`
	// PermitWaiters are the leases in semaphores' lines that hold no
	// slot yet, with the lease IDs an operator revokes them by.
	PermitWaiters          []permitWaiterRow    `json:"permit_waiters"`
	PermitWaitersTruncated bool                 `json:"permit_waiters_truncated,omitempty"`
	Rejections             []fence.RejectionRow `json:"rejections"`
	Bypasses               []fence.BypassRow    `json:"bypasses"`
	// Tables and FenceFloor say how big the gateway's state is and where
	// pruning stands (inspecttables.go). The floor is E:R; 1:0 until
	// first raised, which is no token Parse takes: a string.
	Tables     []fence.TableSize `json:"tables"`
	FenceFloor string            `json:"fence_floor"`
	// EtcdError says why etcd's part (epoch, revision, locks) is missing.
	EtcdError string `json:"etcd_error,omitempty"`
}

type lockRow struct {
	Resource string `json:"resource"`
	// Holder is the holder's token, of the epoch its lease was taken in
	// (0: etcd no longer knows which).
	Holder  tokens.Token `json:"holder_token"`
	LeaseID string       `json:"lease_id"`
	TTL     int64        `json:"ttl"` // seconds left, as in the HTTP API
	Value   string       `json:"value,omitempty"`
	Waiters int64        `json:"waiters"`
	// Transitions counts the lock's grants, the holder's included.
	Transitions int64 `json:"transitions"`
}

type permitWaiterRow struct {
	Semaphore string `json:"semaphore"`
	LeaseID   string `json:"lease_id"`
	Client    string `json:"client,omitempty"`
	Since     int64  `json:"since_revision"` // when it joined the line: the line is in this order
}

// runInspect serves `fencegw inspect`.
func runInspect(ctx context.Context, o inspectOptions, out io.Writer) error {
	cfg, prefix, limit, asJSON := o.cfg, o.prefix, o.limit, o.asJSON
	switch {
	case cfg.DatabaseURL == "":
		return fmt.Errorf("%w: inspect: no database: set --database-url, FENCEGW_DATABASE_URL or DATABASE_URL", errUsage)
	case len(cfg.EtcdEndpoints) == 0:
		return fmt.Errorf("%w: inspect: no etcd endpoints: set --etcd or FENCEGW_ETCD", errUsage)
	case limit < 1 || limit > 1000:
		return fmt.Errorf("%w: inspect: --limit %d: want 1 to 1000", errUsage, limit)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := openMigrated(ctx, cfg.DatabaseURL, "inspect")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	in, err := inspectDatabase(ctx, conn, prefix, limit)
	if err != nil {
		return err
	}
	// etcd's part gets a few seconds of its own: an etcd that is away
	// must not hold back what PostgreSQL already said.
	ectx, ecancel := context.WithTimeout(ctx, inspectEtcdTimeout)
	defer ecancel()
	etcdErr := inspectEtcd(ectx, cfg, in, prefix, limit)
	if etcdErr != nil {
		in.EtcdError = etcdErr.Error()
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(in)
	} else {
		err = in.writeText(out)
	}
	if err == nil && etcdErr != nil {
		// What was shown stands; the status says it is not all of it.
		return fmt.Errorf("inspect: etcd's part is missing: %w", etcdErr)
	}
	return err
}

// inspectEtcdTimeout bounds inspect's questions to etcd.
const inspectEtcdTimeout = 5 * time.Second

// inspectDatabase gathers what PostgreSQL says, read-only.
func inspectDatabase(ctx context.Context, conn *pgx.Conn, prefix string, limit int) (*inspection, error) {
	in := &inspection{Locks: []lockRow{}, PermitWaiters: []permitWaiterRow{}} // [] in JSON when none, as the other lists
	var err error
	if in.Fences, err = fence.Fences(ctx, conn, prefix, limit); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if in.Rejections, err = fence.Rejections(ctx, conn, prefix, limit); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if in.Bypasses, err = fence.Bypasses(ctx, conn, limit); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if err := inspectTables(ctx, conn, in); err != nil {
		return nil, err
	}
	return in, nil
}

// inspectEtcd adds what etcd says to in, read-only: the epoch, its
// revision, the locks held.
func inspectEtcd(ctx context.Context, cfg serveConfig, in *inspection, prefix string, limit int) error {
	cli, err := dialEtcd(ctx, cfg, "inspect")
	if err != nil {
		return err
	}
	defer cli.Close()
	auth := authority.NewEtcd(cli, nil)
	view, err := auth.View(ctx)
	if err != nil {
		return err
	}
	in.Epoch, in.Revision = view.Epoch, view.Revision
	locks, truncated, err := auth.ObserveAll(ctx, prefix, limit)
	if err != nil {
		return err
	}
	in.LocksTruncated = truncated
	for _, st := range locks {
		h := st.Holder
		in.Locks = append(in.Locks, lockRow{
			Resource: st.Resource, Holder: h.Token, LeaseID: h.LeaseID.String(),
			TTL: int64(h.TTL / time.Second), Value: h.Value, Waiters: st.Waiting, Transitions: st.Transitions,
		})
	}
	waiters, truncated, err := auth.PermitWaiters(ctx, prefix, limit)
	if err != nil {
		return err
	}
	in.PermitWaitersTruncated = truncated
	for _, w := range waiters {
		in.PermitWaiters = append(in.PermitWaiters, permitWaiterRow{Semaphore: w.Semaphore, LeaseID: w.LeaseID.String(), Client: w.Owner, Since: w.Since})
	}
	return nil
}

func (in *inspection) writeText(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if in.EtcdError != "" {
		fmt.Fprintf(tw, "etcd: unavailable, its part (epoch, locks) not shown: %s\n", in.EtcdError)
	} else {
		fmt.Fprintf(tw, "epoch %d, etcd revision %d\n", in.Epoch, in.Revision)
	}
	fmt.Fprintf(tw, "\nfences, most recently advanced first (%d):\n", len(in.Fences))
	fmt.Fprintln(tw, "  RESOURCE\tTOKEN\tWRITES\tUPDATED")
	for _, f := range in.Fences {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", f.Resource, f.Token, f.Writes, f.UpdatedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "\nlocks held (%d%s):\n", len(in.Locks), in.etcdListNote(in.LocksTruncated))
	fmt.Fprintln(tw, "  RESOURCE\tHOLDER\tLEASE\tTTL LEFT\tWAITERS\tTRANSITIONS\tVALUE")
	for _, l := range in.Locks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%ds\t%d\t%d\t%s\n", oneLine(l.Resource), l.Holder, l.LeaseID, l.TTL, l.Waiters, l.Transitions, oneLine(l.Value))
	}
	fmt.Fprintf(tw, "\nleases waiting for a semaphore's permit, in line order (%d%s):\n", len(in.PermitWaiters), in.etcdListNote(in.PermitWaitersTruncated))
	fmt.Fprintln(tw, "  SEMAPHORE\tLEASE\tCLIENT\tSINCE REVISION")
	for _, w := range in.PermitWaiters {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\n", oneLine(w.Semaphore), w.LeaseID, oneLine(w.Client), w.Since)
	}
	fmt.Fprintf(tw, "\nrefused writes, newest first (%d):\n", len(in.Rejections))
	fmt.Fprintln(tw, "  AT\tCLIENT\tRESOURCE\tOPERATION\tREASON\tPRESENTED\tCURRENT\tREMOTE\tREQUEST")
	for _, r := range in.Rejections {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.At.UTC().Format(time.RFC3339), r.Client, r.Resource, r.Operation, r.Reason, r.Presented, r.Current, r.RemoteAddr, r.RequestID)
	}
	fmt.Fprintf(tw, "\nbypasses of the guard triggers, newest first (%d):\n", len(in.Bypasses))
	fmt.Fprintln(tw, "  AT\tBY\tTXID\tWHY")
	for _, b := range in.Bypasses {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", b.At.UTC().Format(time.RFC3339), b.By, b.TxID, oneLine(b.Why))
	}
	in.writeTables(tw)
	return tw.Flush()
}

// etcdListNote is what a list read from etcd adds to its count: that more
// were not shown, or that etcd did not answer.
func (in *inspection) etcdListNote(truncated bool) string {
	switch {
	case in.EtcdError != "":
		return ", etcd unavailable"
	case truncated:
		return ", more not shown"
	}
	return ""
}

// oneLine keeps free text (lock values, bypass reasons, resource names:
// anything a client or an operator chose) on one table row, and keeps
// control characters away from the operator's terminal.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			return ' '
		}
		return r
	}, s)
	return clip.String(strings.Join(strings.Fields(s), " "), 80)
}

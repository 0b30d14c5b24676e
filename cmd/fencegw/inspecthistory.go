package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
)

// historyView is what `fencegw inspect --history` shows: a resource's
// lock history and, from etcd, who holds it now.
type historyView struct {
	Resource string               `json:"resource"`
	Since    *time.Time           `json:"since,omitempty"`
	History  []fence.HistoryEvent `json:"history"`
	Holder   *holderRow           `json:"holder,omitempty"`
	// EtcdError says why the current holder is missing.
	EtcdError string `json:"etcd_error,omitempty"`
}

type holderRow struct {
	LeaseID string `json:"lease_id"`
	Token   string `json:"token"`
	Client  string `json:"client,omitempty"`
	Waiting bool   `json:"waiting,omitempty"`
}

// parseSince reads --since: an RFC 3339 time, or a duration back from
// now ("90m": since an hour and a half ago).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("%w: inspect: --since %q: want a time (2026-12-01T14:02:00Z) or a positive duration back from now (90m)", errUsage, clip.String(s, 48))
	}
	return now.Add(-d), nil
}

// runInspectHistory serves `fencegw inspect --history RESOURCE`.
func runInspectHistory(ctx context.Context, o inspectOptions, out io.Writer) error {
	v := historyView{Resource: o.history, History: []fence.HistoryEvent{}}
	switch {
	case o.cfg.DatabaseURL == "":
		return fmt.Errorf("%w: inspect: no database: set --database-url, FENCEGW_DATABASE_URL or DATABASE_URL", errUsage)
	case o.limit < 1 || o.limit > 1000:
		return fmt.Errorf("%w: inspect: --limit %d: want 1 to 1000", errUsage, o.limit)
	}
	var since time.Time
	if o.since != "" {
		var err error
		if since, err = parseSince(o.since, time.Now()); err != nil {
			return err
		}
		v.Since = &since
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := openMigrated(ctx, o.cfg.DatabaseURL, "inspect")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if v.History, err = fence.History(ctx, conn, o.history, since, o.limit); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	var etcdErr error
	if len(o.cfg.EtcdEndpoints) > 0 {
		ectx, ecancel := context.WithTimeout(ctx, inspectEtcdTimeout)
		defer ecancel()
		if etcdErr = v.addHolder(ectx, o.cfg); etcdErr != nil {
			v.EtcdError = etcdErr.Error()
		}
	}
	if o.asJSON {
		err = json.NewEncoder(out).Encode(v)
	} else {
		err = v.writeText(out)
	}
	if err == nil && etcdErr != nil {
		return fmt.Errorf("inspect: etcd's part is missing: %w", etcdErr)
	}
	return err
}

// addHolder reads the current holder from etcd.
func (v *historyView) addHolder(ctx context.Context, cfg serveConfig) error {
	cli, err := dialEtcd(ctx, cfg, "inspect")
	if err != nil {
		return err
	}
	defer cli.Close()
	info, err := authority.NewEtcd(cli, nil).HolderLease(ctx, v.Resource)
	if errors.Is(err, authority.ErrNoLock) {
		return nil
	}
	if err != nil {
		return err
	}
	v.Holder = &holderRow{LeaseID: info.ID.String(), Token: info.Token.String(), Client: info.Owner, Waiting: info.Waiting}
	return nil
}

func (v *historyView) writeText(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	switch {
	case v.EtcdError != "":
		fmt.Fprintf(tw, "etcd: unavailable, the current holder not shown: %s\n", v.EtcdError)
	case v.Holder != nil:
		fmt.Fprintf(tw, "held now by lease %s of %s, token %s\n", v.Holder.LeaseID, clientOrAnyone(v.Holder.Client), v.Holder.Token)
	}
	since := ""
	if v.Since != nil {
		since = " since " + v.Since.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(tw, "lock history of %s%s, oldest first (%d):\n", oneLine(v.Resource), since, len(v.History))
	fmt.Fprintln(tw, "  AT\tEVENT\tLEASE\tCLIENT\tTOKEN\tBY\tREASON")
	for _, e := range v.History {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.At.UTC().Format("2006-01-02T15:04:05.000Z"), e.Event, e.LeaseID,
			oneLine(e.Client), e.Token, oneLine(e.Actor), oneLine(e.Reason))
	}
	return tw.Flush()
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/examples/internal/holdpoint"
)

// config is what a run does.
type config struct {
	Gateway, Bearer string
	Token           string // FENCING_TOKEN of the lock on recon/Day
	Day             string
	Entries, Chunk  int
}

// run reconciles cfg.Day: start_run, post_entries per chunk, finish_run,
// each fenced by cfg.Token, telling w what it does. A day finished
// already is not an error. ctx bounds every write.
func run(ctx context.Context, c *client.Client, cfg config, w io.Writer) error {
	fmt.Fprintf(w, "reconcile %s: token %s\n", cfg.Day, client.Unsigned(cfg.Token))
	res, err := c.Write(ctx, cfg.Token, "start_run", map[string]any{"day": cfg.Day})
	if err != nil {
		return fmt.Errorf("starting: %w", err)
	}
	if by, err := finishedBy(res); err != nil || by != "" {
		if err == nil {
			fmt.Fprintf(w, "reconcile %s: already reconciled by token %s: nothing to do\n", cfg.Day, by)
		}
		return err
	}
	// The whole batch is computed before the first write, as a job that
	// pauses mid-run holds it in memory while the world moves on.
	amounts := entries(cfg.Day, cfg.Entries)
	var total int64
	for first := 1; first <= len(amounts); first += cfg.Chunk {
		chunk := amounts[first-1 : min(first-1+cfg.Chunk, len(amounts))]
		last := first + len(chunk) - 1
		_, err := c.Write(ctx, cfg.Token, "post_entries", map[string]any{"day": cfg.Day, "first": first, "amounts_cents": join(chunk)})
		if err != nil {
			return fmt.Errorf("posting entries %d-%d: %w", first, last, err)
		}
		fmt.Fprintf(w, "reconcile %s: posted entries %d-%d\n", cfg.Day, first, last)
		for _, a := range chunk {
			total += a
		}
		if first == 1 {
			// A test freezes the job here, between two of its writes.
			holdpoint.Here("chunk")
		}
	}
	if _, err := c.Write(ctx, cfg.Token, "finish_run", map[string]any{"day": cfg.Day, "entries": len(amounts)}); err != nil {
		return fmt.Errorf("finishing: %w", err)
	}
	fmt.Fprintf(w, "reconcile %s: finished: %d entries, %d cents\n", cfg.Day, len(amounts), total)
	return nil
}

// finishedBy reads start_run's first statement: the token of the run that
// finished the day, or "" if none has.
func finishedBy(res *client.Result) (string, error) {
	var rows []struct {
		Token string `json:"token"`
	}
	if len(res.Statements) == 0 || res.Statements[0].Rows == nil {
		return "", errors.New("start_run: the answer has no rows of the day's run")
	}
	if err := json.Unmarshal(res.Statements[0].Rows, &rows); err != nil {
		return "", fmt.Errorf("start_run: reading the day's run: %w", err)
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0].Token, nil
}

// entries are the day's amounts in cents: made up, but the same on every
// run, so that two runs of one day post the same entries.
func entries(day string, n int) []int64 {
	seed := int64(0)
	for _, b := range []byte(day) {
		seed = seed*31 + int64(b)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = (seed+int64(i)*7919)%20000 - 10000
	}
	return out
}

// join writes amounts as post_entries takes them: comma-separated.
func join(amounts []int64) string {
	s := make([]string, len(amounts))
	for i, a := range amounts {
		s[i] = strconv.FormatInt(a, 10)
	}
	return strings.Join(s, ",")
}

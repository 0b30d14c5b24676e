package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/torture"
)

// bindTortureClock binds serve's hidden --unsafe-torture-clock: a test
// hook, not a setting. fencegw torture steps each gateway's clock through
// it, to show that no safety property depends on a gateway's clock.
func bindTortureClock(fs *pflag.FlagSet, path *string) {
	fs.StringVar(path, "unsafe-torture-clock", "", "for fencegw torture only: read the wall clock of lease hold records (max_hold, the reaper of leases nobody renews) through this clock page, which the torture's nemesis steps")
	_ = fs.MarkHidden("unsafe-torture-clock")
}

// useTortureClock makes auth's hold records read the clock page at path,
// if one is given.
func useTortureClock(path string, auth *authority.Etcd, log *slog.Logger) error {
	if path == "" {
		return nil
	}
	now, err := torture.GatewayClock(path)
	if err != nil {
		return fmt.Errorf("--unsafe-torture-clock: %w", err)
	}
	auth.UseClock(now)
	log.Warn("--unsafe-torture-clock: max_hold and the lease reaper read a clock fencegw torture steps; this mode exists only for torture runs", "page", path)
	return nil
}

package main

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencegw/fencegw/internal/reload"
	"github.com/fencegw/fencegw/kek"
)

// kekFlags are the flags of the commands that open or make signing keys
// (serve, dev, keys): the file of key-encryption keys the keys are sealed
// under in etcd, and the move from keys stored in clear.
type kekFlags struct {
	File      string
	ReadClear bool
}

// bind registers the flags on fs (cmd's own, or the persistent flags of
// a command with verbs), their defaults from the environment.
func (f *kekFlags) bind(cmd *cobra.Command, fs *pflag.FlagSet) {
	fs.StringVar(&f.File, "token-kek-file", envOr("", "FENCEGW_TOKEN_KEK_FILE"), "the file of key-encryption keys that seal the signing keys in etcd, one a line, the last the newest; read again when it changes. `fencegw kek new FILE` makes one; every gateway and the keys command need the same (FENCEGW_TOKEN_KEK_FILE)")
	showDefault(fs, "token-kek-file", "")
	fs.BoolVar(&f.ReadClear, "read-clear-token-keys", false, "also use signing keys stored in clear by an earlier fencegw, while a deployment moves to sealed keys (fencegw keys rewrap seals them; docs/operations/keys.md)")
	completeFiles(cmd, "token-kek-file", "kek")
}

// keks loads the KEK file, kept current as it changes: a change that does
// not load keeps the KEKs in force, logged and counted in failures under
// file="token-kek". Its errors name the file, never quote it.
func (f *kekFlags) keks(log *slog.Logger, failures *prometheus.CounterVec) (*reload.Files[*kek.Ring], error) {
	if f.File == "" {
		return nil, fmt.Errorf("%w: no --token-kek-file (FENCEGW_TOKEN_KEK_FILE): the signing keys rest in etcd sealed under a key-encryption key that only the gateways and the keys command hold; `fencegw kek new FILE` makes one (docs/operations/keys.md)", errUsage)
	}
	parse := func(contents [][]byte) (*kek.Ring, error) {
		ring, err := kek.Parse(contents[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.File, err)
		}
		if log != nil {
			log.Info("token KEK file loaded", slog.String("file", f.File), slog.Int("keks", len(ring.IDs())), slog.String("newest", ring.Newest()))
		}
		return ring, nil
	}
	files, err := reload.Load([]string{f.File}, parse, reload.Options{OnError: func(err error) {
		if log != nil {
			reloadFailed(log, failures, "token-kek", err)
		}
	}})
	if err != nil {
		return nil, fmt.Errorf("--token-kek-file: %w", err)
	}
	return files, nil
}

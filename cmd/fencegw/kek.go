package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/kek"
)

func kekCommand() *cobra.Command {
	var ifMissing bool
	newKEK := &cobra.Command{
		Use:   "new [FILE]",
		Short: "make a key-encryption key file (or print one)",
		Long: `Makes FILE, readable by its owner only, holding one new key-encryption key
(KEK), or prints such a file's contents without FILE. The KEK seals the
signing keys in etcd: give the same file to every gateway and to the keys
command (--token-kek-file), and to nothing else. An existing FILE is never
overwritten: --if-missing keeps it and succeeds (a one-shot service that
runs on every start), else it is an error. A rotation appends a new KEK as
the file's last line: fencegw kek new >> FILE (docs/operations/keys.md).`,
		Example: "  fencegw kek new /etc/fencegw/token.kek\n  fencegw kek new >> /etc/fencegw/token.kek   # a rotation's new KEK",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				_, err := cmd.OutOrStdout().Write(kek.New())
				return err
			}
			return writeNewKEK(args[0], ifMissing, cmd.ErrOrStderr())
		},
	}
	newKEK.Flags().BoolVar(&ifMissing, "if-missing", false, "keep FILE if it exists, and succeed")
	cmd := verbGroup("kek", "make the key-encryption key that seals the signing keys",
		`The signing keys rest in etcd sealed under a key-encryption key (KEK) that
only the gateways and the keys command hold (--token-kek-file): etcd, its
snapshots and its backups hold nothing that signs without it.`, newKEK)
	cmd.Example = "  fencegw kek new /etc/fencegw/token.kek"
	return cmd
}

// writeNewKEK makes path, with a new KEK, unless it exists.
func writeNewKEK(path string, ifMissing bool, out io.Writer) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist) && ifMissing:
		fmt.Fprintf(out, "kek: %s exists; kept\n", path)
		return nil
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("kek new: %s exists: a KEK file is never overwritten (its KEK may seal keys); --if-missing keeps it", path)
	case err != nil:
		return fmt.Errorf("kek new: %w", err)
	}
	data := kek.New()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("kek new: %w", err)
	}
	ring, _ := kek.Parse(data) // New's file always parses
	fmt.Fprintf(out, "kek: %s made, KEK %s\n", path, ring.Newest())
	return nil
}

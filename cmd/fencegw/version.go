package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/internal/buildinfo"
)

func versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the build: version, VCS revision, Go version",
		Long: `Prints which fencegw this is: its version (the repository's VERSION file,
compiled in: the same that GET /v1/status and every client report), the
VCS revision it was built from (and whether the tree was modified), the
build time and the Go version; --json adds the Go module's own version (a
tag, or "(devel)" for a checkout). fencegw --version prints the same line.`,
		Example: "  fencegw version --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildinfo.Read()
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(info)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), info)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the build as one JSON document")
	return cmd
}

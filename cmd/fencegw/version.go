package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/fencegw/fencegw/internal/buildinfo"
)

// runVersion prints which fencegw this is: `fencegw --version`.
func runVersion(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the build as one JSON document")
	if err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: version takes no arguments, got %q", errUsage, fs.Args())
	}
	info := buildinfo.Read()
	if *asJSON {
		return json.NewEncoder(out).Encode(info)
	}
	_, err := fmt.Fprintln(out, info)
	return err
}

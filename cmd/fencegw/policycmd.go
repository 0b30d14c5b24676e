package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/buildinfo"
	"github.com/fencegw/fencegw/policy"
)

const policyUsage = `usage: fencegw policy check FILE
       fencegw policy schema
       fencegw policy openapi FILE

check validates a policy file and prints it compiled: resources with their
key, comparison, validation, lock delay, coalescing and group commit;
operations with their arguments and statements; clients; guarded tables.
The file is held to the policy's JSON Schema first: mistakes of shape (an
unknown key, a value of the wrong kind) are listed alone, by entry and
line, e.g. operations.debit.statements[0]; once there are none, the
compiler's problems follow, then whatever else the schema found. Every
problem found is listed. Exit status 1 if any.

schema prints that JSON Schema (draft 2020-12, policy/policy.schema.json in
the source), for editors: with it saved as policy.schema.json, a policy
whose first line is
  # yaml-language-server: $schema=policy.schema.json
gets completion, descriptions and these checks as it is written.

openapi prints the OpenAPI 3.1 document of a gateway serving the policy
(what GET /v1/openapi.json answers): every operation with its typed
arguments, the token and idempotency headers, the lease API and every
problem type with its status.
`

// runPolicy serves `fencegw policy check FILE` and `fencegw policy schema`.
func runPolicy(args []string) error { return policyCommand(args, os.Stdout) }

func policyCommand(args []string, out io.Writer) error {
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[len(args)-1]) {
		fmt.Fprint(out, policyUsage)
		return nil
	}
	switch {
	case len(args) == 2 && args[0] == "check":
		p, err := policy.CheckFile(args[1])
		if err != nil {
			return err
		}
		fmt.Fprint(out, p.Describe())
		return nil
	case len(args) == 1 && args[0] == "schema":
		_, err := out.Write(policy.JSONSchema())
		return err
	case len(args) == 2 && args[0] == "openapi":
		p, err := policy.CheckFile(args[1])
		if err != nil {
			return err
		}
		doc, err := gateway.OpenAPI(p, buildinfo.Read().Version)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", doc)
		return err
	}
	return fmt.Errorf("%w: policy: want `fencegw policy check FILE`, `fencegw policy schema` or `fencegw policy openapi FILE`", errUsage)
}

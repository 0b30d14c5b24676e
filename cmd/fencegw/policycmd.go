package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/buildinfo"
	"github.com/fencegw/fencegw/policy"
)

func policyCommand() *cobra.Command {
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "validate a policy file and print it compiled",
		Long: `Validates a policy file and prints it compiled: kinds with their template,
comparison, validation, lock delay, coalescing and group commit; operations
with their arguments and statements; clients; guarded tables. The file is
held to the policy's JSON Schema first: mistakes of shape (an unknown key,
a value of the wrong kind) are listed alone, by entry and line, e.g.
operations.debit.statements[0]; once there are none, the compiler's
problems follow, then whatever else the schema found. Every problem found
is listed. Exit status 1 if any. A former word the file still uses
(deprecated, e.g. resources: for kinds:) is named on standard error, once.`,
		Example:           "  fencegw policy check policy.yaml",
		Args:              exactArgs(1, "FILE, the policy file"),
		ValidArgsFunction: yamlFiles,
		RunE: onPolicy(func(out io.Writer, p *policy.Policy) error {
			_, err := fmt.Fprint(out, p.Describe())
			return err
		}),
	}
	schema := &cobra.Command{
		Use:   "schema",
		Short: "print the JSON Schema of policy files, for editors",
		Long: `Prints the JSON Schema of policy files (draft 2020-12,
policy/policy.schema.json in the source), for editors: with it saved as
policy.schema.json, a policy whose first line is
  # yaml-language-server: $schema=policy.schema.json
gets completion, descriptions and the checks of policy check as it is
written.`,
		Example: "  fencegw policy schema > policy.schema.json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(policy.JSONSchema())
			return err
		},
	}
	openapi := &cobra.Command{
		Use:   "openapi FILE",
		Short: "print the OpenAPI 3.1 document of a gateway serving the policy",
		Long: `Prints the OpenAPI 3.1 document of a gateway serving the policy (what
GET /v1/openapi.json answers): every operation with its typed arguments,
the token and idempotency headers, the lease API and every problem type
with its status.`,
		Example:           "  fencegw policy openapi policy.yaml > openapi.json",
		Args:              exactArgs(1, "FILE, the policy file"),
		ValidArgsFunction: yamlFiles,
		RunE: onPolicy(func(out io.Writer, p *policy.Policy) error {
			doc, err := gateway.OpenAPI(p, buildinfo.Read().Version)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "%s\n", doc)
			return err
		}),
	}
	cmd := verbGroup("policy", "check a policy file, or print the JSON Schema or OpenAPI document of policies",
		"Policy files declare kinds, operations, clients and guarded tables.", check, schema, openapi)
	cmd.Example = `  fencegw policy check policy.yaml
  fencegw policy openapi policy.yaml > openapi.json`
	return cmd
}

// onPolicy is the RunE of a verb whose argument is a policy file: f runs
// on the policy once the file passed every check.
func onPolicy(f func(out io.Writer, p *policy.Policy) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		p, err := policy.CheckFile(args[0])
		if err != nil {
			return err
		}
		for _, d := range p.Deprecations() {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: policy %s: %s\n", args[0], d)
		}
		return f(cmd.OutOrStdout(), p)
	}
}

// yamlFiles completes a policy file's name.
func yamlFiles(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

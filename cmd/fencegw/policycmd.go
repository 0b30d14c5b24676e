package main

import (
	"fmt"
	"slices"

	"github.com/fencegw/fencegw/policy"
)

const policyUsage = `usage: fencegw policy check FILE

Validates a policy file and prints it compiled: resources with their key,
comparison, validation, lock delay, coalescing and group commit;
operations with their arguments and statements; clients; guarded tables.
Every problem found is listed, with its line. Exit status 1 if any.
`

// runPolicy serves `fencegw policy check FILE`.
func runPolicy(args []string) error {
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[len(args)-1]) {
		fmt.Print(policyUsage)
		return nil
	}
	if len(args) != 2 || args[0] != "check" {
		return fmt.Errorf("%w: policy: want `fencegw policy check FILE`", errUsage)
	}
	p, err := policy.Load(args[1])
	if err != nil {
		return err
	}
	fmt.Print(p.Describe())
	return nil
}

package main

import (
	"fmt"

	"github.com/fencegw/fencegw/policy"
)

// runPolicy serves `fencegw policy check FILE`.
func runPolicy(args []string) error {
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

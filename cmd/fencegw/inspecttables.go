package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/fence"
)

// inspectTables adds the size of every fencegw table and the fence floor
// to in: what the gateway's state costs, and how far pruning got.
func inspectTables(ctx context.Context, conn *pgx.Conn, in *inspection) error {
	var err error
	if in.Tables, err = fence.TableSizes(ctx, conn); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	floor, err := fence.Floor(ctx, conn)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	in.FenceFloor = floor.String()
	return nil
}

// writeTables prints inspect's last section: the tables' sizes.
func (in *inspection) writeTables(out io.Writer) {
	fmt.Fprintf(out, "\nfencegw tables (fence floor %s: a resource without a fence row refuses tokens at or below it):\n", in.FenceFloor)
	fmt.Fprintln(out, "  TABLE\tROWS\tBYTES")
	for _, t := range in.Tables {
		approx := ""
		if t.Estimated {
			approx = "~"
		}
		fmt.Fprintf(out, "  %s\t%s%d\t%d\n", t.Table, approx, t.Rows, t.Bytes)
	}
}

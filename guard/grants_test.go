package guard_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/guard"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/schema"
)

// TestGrantsRefuseAPolicyThatWritesTheGatewaysTables: grants gives the
// gateway's role what each application table's statements need, read from
// their plans; a statement that writes a table of the fencegw schema
// would be granted a way around the functions that keep the fence moving
// forward, so such a policy is refused, and one that only reads one is
// granted nothing more on it than the gateway's own SELECT.
func TestGrantsRefuseAPolicyThatWritesTheGatewaysTables(t *testing.T) {
	conn, _ := demo(t)
	const op = `
kinds:
  account: {template: "account/{account}"}
operations:
  lower:
    resource: account
    args:
      account: {type: string}
    statements:
      - sql: %s
`
	for _, tc := range []struct{ name, sql, want string }{
		{"lowering a fence", "UPDATE fencegw.fences SET revision = 1 WHERE resource = :_resource", "writes"},
		{"emptying the audit", "DELETE FROM fencegw.rejections", "writes"},
		{"reading the fences", "SELECT revision FROM fencegw.fences WHERE resource = :_resource", ""},
	} {
		pol, err := policy.Parse("writes-fencegw.yaml", []byte(strings.Replace(op, "%s", `"`+tc.sql+`"`, 1)))
		if err != nil {
			t.Fatal(err)
		}
		sql, err := guard.Grants(context.Background(), conn, pol, "fencegw_gateway", schema.GatewayTable)
		switch {
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want refused: %s", tc.name, err, sql)
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && strings.Count(sql, "ON fencegw.fences ") != 1:
			t.Errorf("%s: fencegw.fences granted other than once:\n%s", tc.name, sql)
		}
	}
}

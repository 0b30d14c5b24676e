package torture

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencegw/fencegw/tokens"
)

// schemaSQL is the torture application: one row per applied write. The ID
// is drawn inside the transaction that holds the resource's fence row lock,
// so per resource it is the commit order the checker reads. No uniqueness
// on intent: a write applied twice must show up, not be refused.
//
// Each resource also has a balance: an append adds 1, a transfer moves an
// amount between its two resources, each in the transaction that logs it
// with the delta, so the checker can hold balances to rows. txn is the
// transaction that applied the row: coalesced and grouped writes share one,
// which is how the report counts them.
const schemaSQL = `
CREATE SCHEMA IF NOT EXISTS torture;
CREATE TABLE IF NOT EXISTS torture.log (
    id       bigserial PRIMARY KEY,
    resource text      NOT NULL,
    epoch    bigint    NOT NULL,
    revision bigint    NOT NULL,
    intent   text      NOT NULL,
    worker   int       NOT NULL,
    delta    bigint    NOT NULL,
    at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    txn      bigint    NOT NULL DEFAULT txid_current()
);
CREATE INDEX IF NOT EXISTS log_resource ON torture.log (resource, id);
CREATE TABLE IF NOT EXISTS torture.balances (
    resource text   PRIMARY KEY,
    cents    bigint NOT NULL
);
`

// gatewayRole is the role the gateways connect as: a superuser, as the
// run's own connections are, but a role of their own, on which the
// nemesis sets short timeouts (nemesis_backend.go) without touching the
// nemesis's, the checker's or a standby's sessions.
const gatewayRole = "torture_gateway"

// roleSQL makes it.
const roleSQL = `DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'torture_gateway') THEN
        CREATE ROLE torture_gateway LOGIN SUPERUSER;
    END IF;
END $$`

// initialBalance is every resource's balance at the start of a run.
const initialBalance = 1000

// balancesSQL gives resources F/r0 .. F/r($1-1) of every family F in $3
// their initial balance.
const balancesSQL = "INSERT INTO torture.balances (resource, cents) SELECT f || '/r' || i, $2 FROM generate_series(0, $1 - 1) AS i, unnest($3::text[]) AS f"

// policyYAML's kinds: every family's writes append to the log under
// its resource's fence — res/{r} (monotonic: a lease's writes all land),
// strict/{r} (strict: a token writes once), the permit slot's of sem/{r},
// a semaphore of semPermits (a row's resource is the slot's, sem/r0#2),
// churn/{r} (the lease-churn workers': every lease writes once) — and
// transfers move money between two res resources; the first two
// arguments are the coalesce and group_commit settings, the same for
// every family, the third semPermits, the fourth more settings of res
// (policy). The operations follow: appendYAML for each family, then
// transferYAML.
const policyYAML = `
kinds:
  res:
    template: "res/{r}"
    coalesce: %[1]s
    group_commit: %[2]s%[4]s
  strict:
    template: "strict/{r}"
    compare: strict
    coalesce: %[1]s
    group_commit: %[2]s
  sem:
    template: "sem/{r}"
    permits: %[3]d
    coalesce: %[1]s
    group_commit: %[2]s
  churn:
    template: "churn/{r}"
    coalesce: %[1]s
    group_commit: %[2]s
operations:
`

// families are the resource families a write appends to, each with its
// operation (appendOp).
var families = []string{"res", "strict", "sem", "churn"}

// appendOp names the operation that appends to the log under a
// resource of family: append for res, append_FAMILY for the others.
func appendOp(family string) string {
	if family == "res" {
		return "append"
	}
	return "append_" + family
}

// appendYAML is the operation (%[1]s) that adds 1 to the balance of a
// resource of family %[2]s and logs the write.
const appendYAML = `  %[1]s:
    resource: %[2]s
    args:
      r: {type: string, max_length: 32}
      intent: {type: string, max_length: 64}
      worker: {type: integer, min: 0, max: 10000}
    statements:
      - sql: UPDATE torture.balances SET cents = cents + 1 WHERE resource = :_resource
        expect_rows: 1
      - sql: |
          INSERT INTO torture.log (resource, epoch, revision, intent, worker, delta)
          VALUES (:_resource, :_epoch, :_revision, :intent, :worker, 1)
`

// transferYAML moves an amount between two res resources, fenced on both.
const transferYAML = `  transfer:
    resources:
      from: "res/{from}"
      to: "res/{to}"
    args:
      from: {type: string, max_length: 32}
      to: {type: string, max_length: 32}
      intent: {type: string, max_length: 64}
      worker: {type: integer, min: 0, max: 10000}
      amount: {type: integer, min: 1, max: 100}
    statements:
      - sql: UPDATE torture.balances SET cents = cents - :amount WHERE resource = :_resource_from
        expect_rows: 1
      - sql: UPDATE torture.balances SET cents = cents + :amount WHERE resource = :_resource_to
        expect_rows: 1
      - sql: |
          INSERT INTO torture.log (resource, epoch, revision, intent, worker, delta)
          VALUES (:_resource_from, :_epoch_from, :_revision_from, :intent || ':from', :worker, -(:amount::bigint)),
                 (:_resource_to, :_epoch_to, :_revision_to, :intent || ':to', :worker, :amount)
`

// semPermits is how many holders each semaphore sem/{r} has at once.
const semPermits = 2

// semBalancesSQL gives every permit slot of sem/r0 .. sem/r($1-1) and of
// the nemesis's semaphore its initial balance: a semaphore's writes
// count under their slot's resource.
const semBalancesSQL = "INSERT INTO torture.balances (resource, cents) SELECT s || '#' || k, $2 FROM unnest(ARRAY(SELECT 'sem/r' || i FROM generate_series(0, $1 - 1) AS i) || $4::text) AS s, generate_series(1, $3) AS k"

// semaphoreOf returns the semaphore a resource is a permit slot of, and
// its permits; "" and 0 for any other resource.
func semaphoreOf(resource string) (string, int) {
	sem, _, ok := tokens.SplitPermitResource(resource)
	if !ok || !strings.HasPrefix(sem, "sem/") {
		return "", 0
	}
	return sem, semPermits
}

// strictResource reports whether resource is of the strict family.
func strictResource(resource string) bool { return strings.HasPrefix(resource, "strict/") }

// churnResource reports whether resource is of the lease-churn family.
func churnResource(resource string) bool { return strings.HasPrefix(resource, "churn/") }

// policy is the run's policy file: policyYAML with cfg's settings. Under
// clock faults res has a max_hold the gateways' clocks are stepped past
// (gatewayMaxHold), which no holder's honest hold reaches.
func policy(cfg Config) string {
	var res string
	if cfg.ClockFaults {
		res = fmt.Sprintf("\n    max_hold: %s", gatewayMaxHold(cfg.TTL))
	}
	var b strings.Builder
	fmt.Fprintf(&b, policyYAML, strconv.FormatBool(cfg.Coalesce), strconv.FormatBool(cfg.GroupCommit), semPermits, res)
	for _, f := range families {
		fmt.Fprintf(&b, appendYAML, appendOp(f), f)
	}
	b.WriteString(transferYAML)
	return b.String()
}

package bench

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/fencegw/fencegw/tokens"
)

// The batched ceiling is the second yardstick. pgbench's one write per
// transaction is what clients that commit every write get from PostgreSQL;
// the gateway groups writes (coalescing, group commit), so what it could
// at best reach on this machine is PostgreSQL running the same fenced
// statement grouped as the gateway grouped it: k writes to a transaction,
// k the mean group size the gateway achieved in the cell, on as many
// connections as the gateway ran write transactions at once (and twice as
// many: the better of the two is the ceiling), with no more writes in
// flight than the cell has clients (ceilingSweep): the closed loop of
// clients never gives the gateway more. Nothing the gateway does can beat
// that: it sends those statements, plus HTTP, JSON and its own
// bookkeeping, on the same two cores. So gateway_over_ceiling says how
// much of the machine's limit for this workload the gateway's CPU per
// write leaves.

// Ceiling is a cell's batched ceiling.
type Ceiling struct {
	// GroupSize is k: writes to a transaction, the gateway's mean group
	// in the cell, rounded.
	GroupSize int `json:"group_size"`
	// Connections is the run kept (ceilingSweep).
	Connections  int     `json:"connections"`
	WritesPerSec float64 `json:"writes_per_sec"`
	Sweep        []Sweep `json:"sweep"`
	// Error says why no run of the sweep measured anything: the cell
	// then has no ceiling, and its other figures stand.
	Error string `json:"error,omitempty"`
}

// Sweep is one run of the ceiling's sweep.
type Sweep struct {
	Connections  int     `json:"connections"`
	WritesPerSec float64 `json:"writes_per_sec"`
	// Writes is every write it committed, the warmup's included.
	Writes     int64  `json:"writes"`
	Errors     int64  `json:"errors,omitempty"`
	FirstError string `json:"first_error,omitempty"`
}

// groupTransactions is the gateway's default bound on its write
// transactions in flight with group commit (fence.groupTransactions).
func groupTransactions() int { return max(2, runtime.GOMAXPROCS(0)) }

// ceilingScript is pgbenchScript k times over in one transaction. The
// gateway writes a group's resources in their order, so that two of its
// transactions never wait for each other's rows the other way round; the
// ceiling's transactions must not either, or PostgreSQL aborts them as
// deadlocks (k writes of random accounts in random order, on several
// connections, meet often). So for the uniform distribution the k
// accounts are drawn in ascending order: the first at random among the
// first 2·Accounts/k, each next a random step of 1 to 2·Accounts/k past
// the one before (never past the last account), which spreads them over
// all the accounts as k random ones are. The hot
// distribution writes one account; the Zipfian's draws stay unordered
// (it is no target of the ceiling), and may deadlock at large k.
func ceilingScript(d Dist, tok tokens.Token, k int) string {
	var b strings.Builder
	b.WriteString("BEGIN;\n")
	step := max(1, 2*Accounts/k)
	for i := range k {
		one := pgbenchScript(d, tok)
		// Each write draws its own account: :id becomes :idN.
		one = strings.ReplaceAll(one, ":id", ":id"+strconv.Itoa(i))
		draw := fmt.Sprintf(`\set id%d random(1, %d)`, i, min(step, Accounts))
		if i > 0 {
			draw = fmt.Sprintf(`\set id%d least(:id%d + random(1, %d), %d)`, i, i-1, step, Accounts)
		}
		if d == Uniform {
			one = strings.Replace(one, fmt.Sprintf(`\set id random(1, %d)`, Accounts), draw, 1)
		}
		one = strings.ReplaceAll(one, `\set id `, `\set id`+strconv.Itoa(i)+" ")
		b.WriteString(one)
	}
	b.WriteString("COMMIT;\n")
	return b.String()
}

// ceilingConnections is the connections the ceiling's sweep starts from:
// as many as the cell's gateways run write transactions at once, each
// replica its own, and no more than the cell's clients (a transaction
// needs a write to carry). Nothing else of the cell counts: idle
// connections to the gateway carry no writes.
func ceilingConnections(cfg Config, replicas, clients, poolSize int) int {
	transactions := cmp.Or(cfg.WriteTransactions, groupTransactions())
	if cfg.NoGroupCommit {
		transactions = cmp.Or(cfg.WriteTransactions, poolSize)
	}
	return max(1, min(transactions*max(1, replicas), clients))
}

// ceilingSweep is the connections the ceiling runs on, k writes a
// transaction: the gateway's write transactions and twice as many, those
// whose writes in flight fit the cell's clients. A ceiling with more in
// flight than the clients measures more concurrency than the closed loop
// of clients can give the gateway, not a limit of CPU per write.
func ceilingSweep(k, transactions, clients int) []int {
	var out []int
	for _, conns := range []int{transactions, 2 * transactions} {
		if conns*k <= clients {
			out = append(out, conns)
		}
	}
	if len(out) == 0 {
		out = append(out, max(1, clients/k))
	}
	return out
}

// runCeiling measures the ceiling of a cell of clients whose gateway
// grouped writes groupSize to a transaction on average: on transactions
// connections and twice as many, each only if its writes in flight (k a
// connection) are no more than the cell's clients, which are all the
// writes the gateway ever has in flight; with neither, on as many
// connections as k writes fit the clients. A sweep whose runs all failed
// says why in Error.
func (e *env) runCeiling(ctx context.Context, d Dist, tok tokens.Token, groupSize float64, transactions, clients int) (*Ceiling, error) {
	k := max(1, int(math.Round(groupSize)))
	c := &Ceiling{GroupSize: k}
	var why []string
	for _, conns := range ceilingSweep(k, transactions, clients) {
		p, err := runPgbenchScript(ctx, e.pgbench, libpqURL(e.cfg.DatabaseURL), conns, ceilingScript(d, tok, k), e.cfg.window())
		if err != nil {
			return nil, err
		}
		s := Sweep{Connections: conns, WritesPerSec: p.TxPerSec * float64(k), Writes: (p.Writes + p.WarmupWrites) * int64(k), Errors: p.ErrorCount(), FirstError: p.FirstError}
		c.Sweep = append(c.Sweep, s)
		if s.Errors == 0 && s.WritesPerSec > c.WritesPerSec {
			c.Connections, c.WritesPerSec = conns, s.WritesPerSec
		}
		if s.Errors > 0 || s.WritesPerSec == 0 {
			why = append(why, fmt.Sprintf("on %d connections: %s", conns, cmp.Or(s.FirstError, "no transaction measured")))
		}
	}
	if c.WritesPerSec == 0 {
		c.Error = "the batched ceiling could not be measured: " + strings.Join(why, "; ")
	}
	return c, nil
}

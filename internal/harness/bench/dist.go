package bench

import "math/rand/v2"

// Accounts is the number of rows of bench.accounts, ids 1 to Accounts
// (migrations/0001_bench.up.sql).
const Accounts = 10_000

// Dist is how a cell's writes spread over the accounts.
type Dist string

const (
	// Uniform writes every account equally often: writers rarely meet on
	// a fence row.
	Uniform Dist = "uniform"
	// Hot writes account 1 only: every write queues for the same fence
	// row lock, the worst case for one resource.
	Hot Dist = "hot"
	// Zipf skews writes towards low ids (s = 1.1): about one write in
	// eight goes to account 1, the rest to a long tail.
	Zipf Dist = "zipf"
)

// zipfS is the Zipf exponent; math/rand/v2 needs s > 1.
const zipfS = 1.1

// picker returns a source of account ids drawn from r.
func (d Dist) picker(r *rand.Rand) func() int64 {
	switch d {
	case Hot:
		return func() int64 { return 1 }
	case Zipf:
		z := rand.NewZipf(r, zipfS, 1, Accounts-1)
		return func() int64 { return int64(z.Uint64()) + 1 }
	}
	return func() int64 { return r.Int64N(Accounts) + 1 }
}

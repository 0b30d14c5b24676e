package authority_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// BenchmarkLeaseChurn grants and releases b.N leases on an etcd of its
// own, on one resource or each on a resource of its own (one at a time,
// or from many goroutines at once, as many clients would), with a
// lock-delay, and reports what they left in etcd: the keys under
// /fencegw/ and the database's size, then the keys after the janitor's
// prune of transitions keys (BENCHMARKS.md holds the figures). What a
// lease writes goes with it; each resource ever locked keeps one key, its
// transitions count, until pruned.
func BenchmarkLeaseChurn(b *testing.B) {
	for _, c := range []struct {
		name               string
		distinct, parallel bool
	}{{"one-resource", false, false}, {"a-resource-each", true, false}, {"a-resource-each-parallel", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			_, cli := testenv.PrivateEtcd(b)
			a := authority.NewEtcd(cli, testenv.KEK())
			ctx := context.Background()
			var n atomic.Int64
			churn := func() {
				resource := "churn/r"
				if i := n.Add(1); c.distinct {
					resource = fmt.Sprintf("churn/r%d", i)
				}
				l, err := a.Acquire(ctx, resource, authority.AcquireOptions{TTL: 10 * time.Second, LockDelay: time.Second})
				if err != nil {
					b.Error(err)
					return
				}
				if err := a.Release(ctx, l.ID, ""); err != nil {
					b.Error(err)
				}
			}
			if c.parallel {
				b.SetParallelism(8) // 8 per core: clients, not cores
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						churn()
					}
				})
			} else {
				for b.Loop() {
					churn()
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(countKeys(b, cli)), "keys")
			st, err := cli.Status(ctx, cli.Endpoints()[0])
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.DbSize)/(1<<20), "db-MiB")
			b.ReportMetric(float64(st.DbSizeInUse)/(1<<20), "db-in-use-MiB")
			start := time.Now()
			if _, err := a.PruneTransitions(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds(), "prune-s")
			b.ReportMetric(float64(countKeys(b, cli)), "keys-after-prune")
		})
	}
}

func countKeys(b *testing.B, cli *clientv3.Client) int64 {
	b.Helper()
	keys, err := cli.Get(context.Background(), "/fencegw/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		b.Fatal(err)
	}
	return keys.Count
}

package authority_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/internal/harness/testenv"
)

// BenchmarkLeaseChurn grants and releases b.N leases on an etcd of its
// own, on one resource or each on a resource of its own, with a
// lock-delay, and reports what they left in etcd: the keys under
// /fencegw/ and the database's size (BENCHMARKS.md holds the figures).
// What a lease writes goes with it; each resource ever locked keeps one
// key, its transitions count.
func BenchmarkLeaseChurn(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		name := "one-resource"
		if distinct {
			name = "a-resource-each"
		}
		b.Run(name, func(b *testing.B) {
			_, cli := testenv.PrivateEtcd(b)
			a := authority.NewEtcd(cli)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				resource := "churn/r"
				if distinct {
					resource = fmt.Sprintf("churn/r%d", i)
				}
				i++
				l, err := a.Acquire(ctx, resource, authority.AcquireOptions{TTL: 10 * time.Second, LockDelay: time.Second})
				if err != nil {
					b.Fatal(err)
				}
				if err := a.Release(ctx, l.ID, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			keys, err := cli.Get(ctx, "/fencegw/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				b.Fatal(err)
			}
			st, err := cli.Status(ctx, cli.Endpoints()[0])
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(keys.Count), "keys")
			b.ReportMetric(float64(st.DbSize)/(1<<20), "db-MiB")
			b.ReportMetric(float64(st.DbSizeInUse)/(1<<20), "db-in-use-MiB")
		})
	}
}

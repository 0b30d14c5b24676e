package torture

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestLinks: a gateway's URLs name its own proxies — each PostgreSQL
// host of a multi-host URL in its place, each etcd member in its order
// and scheme — and its sessions carry its name and the gateways' role, so
// the nemesis can cut this gateway off alone, find its transactions in
// pg_stat_activity, and set timeouts on the gateways' sessions alone.
func TestLinks(t *testing.T) {
	members := []*etcdMember{{clientURL: "https://127.0.0.1:2379"}, {clientURL: "https://127.0.0.1:2380"}}
	multi := "postgres://postgres@127.0.0.1:5432,127.0.0.1:5433/postgres?sslmode=disable&target_session_attrs=read-write"
	addrs, err := pgAddrs(multi)
	if err != nil || strings.Join(addrs, " ") != "127.0.0.1:5432 127.0.0.1:5433" {
		t.Fatalf("pgAddrs = %v, %v", addrs, err)
	}
	l, err := newLinks(addrs, members)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	got, err := l.databaseURL(multi, "torture-gateway-1")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(got)
	if want := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", l.pg[0].port(), l.pg[1].port()); u.Host != want {
		t.Errorf("hosts %s, want the proxies %s", u.Host, want)
	}
	q := u.Query()
	if q.Get("application_name") != "torture-gateway-1" || q.Get("target_session_attrs") != "read-write" || q.Get("sslmode") != "disable" {
		t.Errorf("query %s: want the name added, the rest kept", u.RawQuery)
	}
	if u.User.Username() != gatewayRole {
		t.Errorf("user %s, want the gateways' role %s, whose settings the nemesis changes alone", u.User.Username(), gatewayRole)
	}
	if *l.pg[1].target.Load() != "127.0.0.1:5433" || *l.etcd[1].target.Load() != "127.0.0.1:2380" {
		t.Errorf("proxies lead to %s and %s", *l.pg[1].target.Load(), *l.etcd[1].target.Load())
	}
	flags := l.etcdFlags(members)
	if want := fmt.Sprintf("https://127.0.0.1:%d,https://127.0.0.1:%d", l.etcd[0].port(), l.etcd[1].port()); flags[0] != "--etcd" || flags[1] != want {
		t.Errorf("etcd flags %v, want --etcd %s", flags, want)
	}
	if _, err := l.databaseURL("postgres://postgres@127.0.0.1:5432/postgres", "x"); err == nil {
		t.Error("a URL with fewer hosts than proxies was accepted")
	}
}

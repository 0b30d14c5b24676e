package torture

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// links are one gateway's network paths, each through a proxy the nemesis
// controls: to each PostgreSQL server (one, or the primary's and
// standby's ports with --failover) and to each etcd member. A gateway's
// own proxies let the nemesis cut one gateway off while the others carry
// on, which is the partition that matters: a gateway that still takes
// writes but no longer hears etcd, or whose commits' answers are lost.
type links struct {
	pg   []*slowProxy
	etcd []*slowProxy
}

// newLinks proxies pgAddrs and members' client URLs for one gateway.
func newLinks(pgAddrs []string, members []*etcdMember) (*links, error) {
	l := &links{}
	for _, a := range pgAddrs {
		p, err := startProxy(a)
		if err != nil {
			l.close()
			return nil, err
		}
		l.pg = append(l.pg, p)
	}
	for _, m := range members {
		u, err := url.Parse(m.clientURL)
		if err != nil {
			l.close()
			return nil, err
		}
		p, err := startProxy(u.Host)
		if err != nil {
			l.close()
			return nil, err
		}
		l.etcd = append(l.etcd, p)
	}
	return l, nil
}

// databaseURL is dbURL (one host, or the multi-host URL naming the
// servers in the order of the addresses links were made for) with each
// host replaced by its proxy, the gateways' role as its user, and
// application_name set to name so that pg_stat_activity tells this
// gateway's sessions apart.
func (l *links) databaseURL(dbURL, name string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	hosts := strings.Split(u.Host, ",")
	if len(hosts) != len(l.pg) {
		return "", fmt.Errorf("torture: %d PostgreSQL hosts for %d proxies", len(hosts), len(l.pg))
	}
	for i := range hosts {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(l.pg[i].port()))
	}
	u.Host = strings.Join(hosts, ",")
	u.User = url.User(gatewayRole)
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// etcdFlags are fencegw's flags to reach the cluster through these links.
func (l *links) etcdFlags(members []*etcdMember) []string {
	flags := etcdFlags(members)
	eps := make([]string, len(l.etcd))
	for i, p := range l.etcd {
		u, _ := url.Parse(members[i].clientURL) // parsed in newLinks
		eps[i] = fmt.Sprintf("%s://127.0.0.1:%d", u.Scheme, p.port())
	}
	flags[1] = strings.Join(eps, ",") // flags[0] is --etcd
	return flags
}

// to returns the proxies of the paths to target: "etcd" or "postgres".
func (l *links) to(target string) []*slowProxy {
	if target == "etcd" {
		return l.etcd
	}
	return l.pg
}

func (l *links) close() {
	for _, p := range append(append([]*slowProxy{}, l.pg...), l.etcd...) {
		p.close()
	}
}

// pgAddrs are the addresses a database's servers listen on: the one
// server, or both ports of a replicated pair in the order its URL names
// them.
func pgAddrs(dbURL string) ([]string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, err
	}
	if u.Host == "" {
		return nil, errors.New("torture: a database URL without a host")
	}
	return strings.Split(u.Host, ","), nil
}

package authority

import (
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// named addresses the range responses of a transaction made only of gets
// by the names of its operations, given in the order they were sent:
// read["holds"], not resp.Responses[0], which the next operation added
// in front of it would silently make another read's.
func named(resp *clientv3.TxnResponse, names ...string) map[string]*etcdserverpb.RangeResponse {
	read := make(map[string]*etcdserverpb.RangeResponse, len(names))
	for i, name := range names {
		if i < len(resp.Responses) {
			read[name] = resp.Responses[i].GetResponseRange()
		}
	}
	return read
}

package authority

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Every etcd transaction of the authority is a txn: its operations have
// names, and its responses are read by those names, never by position (a
// response read as the fourth silently becomes another operation's the
// day one is added in front of it). Operations compose as slices of txnOp, so a
// lease's operations (owner, hold records, signer) and a lock's (its key,
// its holder record) join one transaction without either counting the
// other's.

// txnOp is one operation of a transaction, and the name its response is
// read by.
type txnOp struct {
	name string
	op   clientv3.Op
}

// named names op.
func named(name string, op clientv3.Op) txnOp { return txnOp{name: name, op: op} }

// txn is an etcd transaction of named operations: If ifs, Then then, Else
// els. Names are unique within a branch; one name may stand in both for
// the same read.
type txn struct {
	ifs       []clientv3.Cmp
	then, els []txnOp
}

// reads is a transaction of reads only: one linearizable read of every
// key ops name, at one revision.
func reads(ops ...txnOp) txn { return txn{then: ops} }

// txnResult is a committed txn: the responses of the branch that ran, by
// name.
type txnResult struct {
	Header    *etcdserverpb.ResponseHeader
	Succeeded bool // the If held: Then ran
	byName    map[string]*etcdserverpb.ResponseOp
	names     map[string]bool // of both branches, to tell a misspelt name from the other branch's
}

// commit sends t on cli, bounded by ctx.
func (t txn) commit(ctx context.Context, cli *clientv3.Client) (txnResult, error) {
	names := map[string]bool{}
	for _, branch := range [][]txnOp{t.then, t.els} {
		seen := map[string]bool{}
		for _, o := range branch {
			if seen[o.name] {
				// A programming error: fail where it is made, as etcd's
				// client does when a Txn is built wrong.
				panic(fmt.Sprintf("authority: two operations named %q in one transaction", o.name))
			}
			seen[o.name], names[o.name] = true, true
		}
	}
	resp, err := cli.Txn(ctx).If(t.ifs...).Then(opsOf(t.then)...).Else(opsOf(t.els)...).Commit()
	if err != nil {
		return txnResult{}, err
	}
	ran := t.then
	if !resp.Succeeded {
		ran = t.els
	}
	r := txnResult{Header: resp.Header, Succeeded: resp.Succeeded, byName: make(map[string]*etcdserverpb.ResponseOp, len(ran)), names: names}
	for i, op := range resp.Responses {
		r.byName[ran[i].name] = op
	}
	return r, nil
}

func opsOf(ops []txnOp) []clientv3.Op {
	out := make([]clientv3.Op, len(ops))
	for i, o := range ops {
		out[i] = o.op
	}
	return out
}

// response is the response of the operation called name, nil if it is
// the other branch's. A name neither branch has is a misspelling, which
// would otherwise read as a key that is not there.
func (r txnResult) response(name string) *etcdserverpb.ResponseOp {
	if !r.names[name] {
		panic(fmt.Sprintf("authority: no operation named %q in the transaction", name))
	}
	return r.byName[name]
}

// rangeOf is the read called name; nil (no keys, count 0) if it is the
// other branch's.
func (r txnResult) rangeOf(name string) *etcdserverpb.RangeResponse {
	return r.response(name).GetResponseRange()
}

// kvs are the keys the read called name found.
func (r txnResult) kvs(name string) []*mvccpb.KeyValue { return r.rangeOf(name).GetKvs() }

// count is the count of the read called name.
func (r txnResult) count(name string) int64 { return r.rangeOf(name).GetCount() }

// deleted is how many keys the deletion called name deleted.
func (r txnResult) deleted(name string) int64 {
	return r.response(name).GetResponseDeleteRange().GetDeleted()
}

package authority

import (
	"context"
	"fmt"
	"slices"

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
	name   string
	op     clientv3.Op
	nested *txn // the transaction op runs, if it is one
}

// named names op.
func named(name string, op clientv3.Op) txnOp { return txnOp{name: name, op: op} }

// nest names t as an operation of another transaction: etcd applies it
// with the rest, atomically, and its If decides its branch alone.
func nest(name string, t txn) txnOp {
	return txnOp{name: name, op: clientv3.OpTxn(t.ifs, opsOf(t.then), opsOf(t.els)), nested: &t}
}

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
	txn       txn             // that ran
}

// commit sends t on cli, bounded by ctx.
func (t txn) commit(ctx context.Context, cli *clientv3.Client) (txnResult, error) {
	names := t.names()
	resp, err := cli.Txn(ctx).If(t.ifs...).Then(opsOf(t.then)...).Else(opsOf(t.els)...).Commit()
	if err != nil {
		return txnResult{}, err
	}
	return t.result(resp.Header, resp.Succeeded, resp.Responses, names), nil
}

// names are the names of t's operations, in both branches. Two alike in
// a branch are a programming error: it fails where it is made, as
// etcd's client does when a Txn is built wrong.
func (t txn) names() map[string]bool {
	names := map[string]bool{}
	for _, branch := range [][]txnOp{t.then, t.els} {
		seen := map[string]bool{}
		for _, o := range branch {
			if seen[o.name] {
				panic(fmt.Sprintf("authority: two operations named %q in one transaction", o.name))
			}
			seen[o.name], names[o.name] = true, true
			if o.nested != nil {
				o.nested.names()
			}
		}
	}
	return names
}

// result names the responses of the branch of t that ran.
func (t txn) result(h *etcdserverpb.ResponseHeader, succeeded bool, resps []*etcdserverpb.ResponseOp, names map[string]bool) txnResult {
	ran := t.then
	if !succeeded {
		ran = t.els
	}
	r := txnResult{Header: h, Succeeded: succeeded, byName: make(map[string]*etcdserverpb.ResponseOp, len(ran)), names: names, txn: t}
	for i, op := range resps {
		r.byName[ran[i].name] = op
	}
	return r
}

// nested is the result of the transaction nested under name (nest); one
// that did not run (the other branch's) reads as not succeeded, with no
// responses.
func (r txnResult) nested(name string) txnResult {
	resp := r.response(name).GetResponseTxn()
	for _, o := range append(slices.Clip(r.txn.then), r.txn.els...) {
		if o.name == name && o.nested != nil {
			return o.nested.result(r.Header, resp.GetSucceeded(), resp.GetResponses(), o.nested.names())
		}
	}
	panic(fmt.Sprintf("authority: the operation named %q is no transaction", name))
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

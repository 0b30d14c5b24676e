package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrKeyInUse means a key was kept because a live lease may hold a token
// it signed: retiring it would refuse that token while its lease lives.
var ErrKeyInUse = errors.New("authority: signing key in use by a live lease")

// RetireOptions says which signing keys RetireKeys takes out of service.
type RetireOptions struct {
	// Keep is how many of the newest keys stay in service. The key that
	// signs now and any newer one (waiting for its sign-after) always stay.
	Keep int
	// Force retires keys that live leases may hold tokens of: those
	// tokens are refused from then on.
	Force bool
	// DryRun decides, and retires nothing.
	DryRun bool
}

// KeyRetirement is RetireKeys's decision on one key.
type KeyRetirement struct {
	ID      string `json:"id"`
	Retired bool   `json:"retired"` // with DryRun: would be
	Reason  string `json:"reason"`
	// LiveLeases counts the live leases that may hold a token the key
	// signed; Leases names the first of them (at most maxListedLeases):
	// why the key was kept, or, forced, whose tokens are refused now.
	LiveLeases int         `json:"live_leases"`
	Leases     []LiveLease `json:"leases,omitempty"`
}

// LiveLease is a live lease that may hold a token of a key.
type LiveLease struct {
	ID       string `json:"lease_id"`
	Resource string `json:"resource,omitempty"`  // "": granted before its signer was recorded
	SignedBy string `json:"signed_by,omitempty"` // the key of its grant; "": unknown, any key
	// TTLSeconds is what is left of the lease unless it is renewed: the
	// least time until the key it holds back can go. 0: unknown.
	TTLSeconds int64 `json:"ttl,omitempty"`
}

// maxListedLeases bounds the leases named per key (and the TTL reads
// made for them); LiveLeases counts them all.
const maxListedLeases = 10

// retireAttempts bounds the rounds of RetireKeys: a round starts again
// only when a grant was recorded under a key it retires between its read
// and its write, which happens only while a replica's keys are behind.
const retireAttempts = 3

// RetireKeys takes every signing key but the newest opts.Keep out of
// service, except a key a live lease may hold a token of (unless
// opts.Force): the key that signed the token a live lease was granted
// with, and every newer one, since a keepalive may have signed the token
// again with it. A lease granted before such records were kept may hold
// any key's token. A retired key moves to the retired keys: it never
// signs or validates again, and a token it signed is refused as a retired
// key's. It returns its decision on each key it considered, oldest last,
// and an error that is ErrKeyInUse if it kept one for a live lease; the
// others are retired all the same. With opts.DryRun it decides the same,
// retires nothing, and returns no ErrKeyInUse.
func (a *Etcd) RetireKeys(ctx context.Context, opts RetireOptions) ([]KeyRetirement, error) {
	if opts.Keep < 1 {
		return nil, fmt.Errorf("authority: keep at least one signing key")
	}
	if _, err := a.keyring(ctx); err != nil { // a new cluster's first key
		return nil, err
	}
	var plan []KeyRetirement
	for attempt := 1; ; attempt++ {
		p, err := a.planRetirement(ctx, opts)
		if err != nil {
			return nil, err
		}
		plan = p.decisions
		if opts.DryRun || len(p.retire) == 0 {
			break
		}
		done, err := a.commitRetirement(ctx, p, opts.Force)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
		if attempt == retireAttempts {
			return nil, unavailable("retire signing keys", errors.New("leases kept being granted under the keys to retire; is a replica's set of keys out of date?"))
		}
	}
	if !opts.DryRun {
		if _, err := a.ReloadKeys(ctx); err != nil {
			return plan, err
		}
	}
	a.readLeaseTTLs(ctx, plan)
	if opts.DryRun {
		return plan, nil // a report, whatever it says
	}
	return plan, keptError(plan)
}

// retirement is one round's plan.
type retirement struct {
	decisions []KeyRetirement
	retire    []*mvccpb.KeyValue // the keys to move, as read
	revision  int64              // of the read
}

// planRetirement reads the keys, the lease records and the leases at one
// revision and decides.
func (a *Etcd) planRetirement(ctx context.Context, opts RetireOptions) (retirement, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	resp, err := reads(
		named("keys", clientv3.OpGet(keysPrefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))),
		named("token records", clientv3.OpGet(leaseTokenPrefix, clientv3.WithPrefix())),
		named("owners", clientv3.OpGet(ownerPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())),
		named("lines", clientv3.OpGet(queuesPrefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())),
	).commit(ctx, a.cli)
	if err != nil {
		return retirement{}, unavailable("read signing keys and leases", err)
	}
	kvs := resp.kvs("keys")
	leases := liveLeases(resp.kvs("token records"), resp.kvs("owners"), resp.kvs("lines"))
	infos := keyInfos(kvs, keysPrefix, time.Now())
	keep := opts.Keep
	for i, k := range infos {
		if k.Signing {
			keep = max(keep, i+1)
		}
	}
	p := retirement{revision: resp.Header.Revision}
	for i := min(keep, len(infos)); i < len(infos); i++ {
		d := KeyRetirement{ID: infos[i].ID}
		for _, l := range leases {
			if l.SignedBy == "" || l.SignedBy <= d.ID {
				if d.LiveLeases++; len(d.Leases) < maxListedLeases {
					d.Leases = append(d.Leases, l)
				}
			}
		}
		switch {
		case d.LiveLeases == 0:
			d.Retired, d.Reason = true, "no live lease holds a token it signed"
		case opts.Force:
			d.Retired, d.Reason = true, fmt.Sprintf("forced: %d live lease(s) may hold a token it signed, refused from now on", d.LiveLeases)
		default:
			d.Reason = fmt.Sprintf("%d live lease(s) may hold a token it signed: retire it once they have ended, or force it", d.LiveLeases)
		}
		if d.Retired {
			p.retire = append(p.retire, kvs[i])
		}
		p.decisions = append(p.decisions, d)
	}
	return p, nil
}

// liveLeases are fencegw's live leases (owners) with their records of
// which key signed their grant (records), by lease ID. A lease in a
// semaphore's line (queued) without a record is waiting for its permit:
// it holds no token yet, and its grant records the key that signs it
// then, a newer one if that key was retired meanwhile (signerOps), so it
// holds no key back.
func liveLeases(records, owners, queued []*mvccpb.KeyValue) []LiveLease {
	recorded := make(map[string]leaseToken, len(records))
	for _, kv := range records {
		var lt leaseToken
		if json.Unmarshal(kv.Value, &lt) == nil {
			recorded[strings.TrimPrefix(string(kv.Key), leaseTokenPrefix)] = lt
		}
	}
	waiting := make(map[string]bool, len(queued))
	for _, kv := range queued {
		if _, id, ok := queueKeyParts(string(kv.Key)); ok {
			waiting[id.String()] = true
		}
	}
	out := make([]LiveLease, 0, len(owners))
	for _, kv := range owners {
		id := strings.TrimPrefix(string(kv.Key), ownerPrefix)
		lt, ok := recorded[id] // none: granted before records were kept, any key's token
		if !ok && waiting[id] {
			continue
		}
		out = append(out, LiveLease{ID: id, Resource: lt.Resource, SignedBy: lt.Key})
	}
	return out
}

// commitRetirement moves the keys of p to the retired keys, unless one of
// them changed since p's read or, unless forced, a lease was recorded
// under one of them since: then it reports false, and p is out of date.
// A grant recorded after the move finds its key gone (signerOps) and
// records a newer one.
func (a *Etcd) commitRetirement(ctx context.Context, p retirement, force bool) (bool, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	var t txn
	now := time.Now().UTC()
	for _, kv := range p.retire {
		id := strings.TrimPrefix(string(kv.Key), keysPrefix)
		var stored storedKey
		if err := json.Unmarshal(kv.Value, &stored); err != nil {
			return false, fmt.Errorf("authority: etcd key %s does not hold a signing key", kv.Key)
		}
		stored.RetiredAt = now
		value, err := json.Marshal(stored)
		if err != nil {
			return false, err
		}
		t.ifs = append(t.ifs, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
		if !force {
			t.ifs = append(t.ifs, clientv3.Compare(clientv3.ModRevision(signedByPrefix+id+"/").WithPrefix(), "<", p.revision+1))
		}
		t.then = append(t.then, named("delete "+id, clientv3.OpDelete(string(kv.Key))), named("retire "+id, clientv3.OpPut(retiredKeysPrefix+id, string(value))))
	}
	resp, err := t.commit(ctx, a.cli)
	if err != nil {
		return false, unavailable("retire signing keys", err)
	}
	return resp.Succeeded, nil
}

// readLeaseTTLs fills in what is left of the leases plan names. It is
// information only: a lease it cannot read keeps TTLSeconds 0 (unknown).
func (a *Etcd) readLeaseTTLs(ctx context.Context, plan []KeyRetirement) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	ttls := map[string]int64{}
	for i := range plan {
		for j := range plan[i].Leases {
			l := &plan[i].Leases[j]
			ttl, ok := ttls[l.ID]
			if !ok {
				if id, err := ParseLeaseID(l.ID); err == nil {
					if resp, err := a.cli.TimeToLive(ctx, clientv3.LeaseID(id)); err == nil && resp.TTL > 0 {
						ttl = resp.TTL
					}
				}
				ttls[l.ID] = ttl
			}
			l.TTLSeconds = ttl
		}
	}
}

// keptError is the error of a plan that kept keys for live leases, nil
// if it kept none.
func keptError(plan []KeyRetirement) error {
	var kept []string
	for _, d := range plan {
		if d.Retired {
			continue
		}
		what := fmt.Sprintf("key %s (%d live lease(s)", d.ID, d.LiveLeases)
		if len(d.Leases) > 0 {
			l := d.Leases[0]
			what += ", such as " + l.ID
			if l.Resource != "" {
				what += " on " + l.Resource
			}
			if l.TTLSeconds > 0 {
				what += fmt.Sprintf(", %ds left unless renewed", l.TTLSeconds)
			}
		}
		kept = append(kept, what+")")
	}
	if len(kept) == 0 {
		return nil
	}
	return fmt.Errorf("%w: kept %s: a token they signed may still be in use; retire once those leases have ended, or force it (their tokens are then refused)",
		ErrKeyInUse, strings.Join(kept, ", "))
}

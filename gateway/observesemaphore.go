package gateway

import (
	"net/http"

	"github.com/fencegw/fencegw/authority"
)

// semaphoreStateJSON is GET /v1/leases?resource=<semaphore>: the lock
// answer's fields where they mean the same (resource, revision, waiters,
// waiting, truncated, transitions), and the slots' holders in place of
// one holder.
type semaphoreStateJSON struct {
	Resource string             `json:"resource"`
	Revision int64              `json:"revision"`
	Permits  int                `json:"permits"`
	Holders  []permitHolderJSON `json:"holders"` // the held slots, by permit
	// Waiters are in the order they will be admitted: the first 99 in
	// line that hold no slot. A place in line is no token, and a lease ID
	// is its holder's alone: each shows its value only.
	Waiters []waiterJSON `json:"waiters"`
	Waiting int64        `json:"waiting"` // all of them
	// Transitions counts the grants of every slot.
	Transitions int64 `json:"transitions"`
	Truncated   bool  `json:"truncated,omitempty"`
}

// permitHolderJSON is one held slot: the lock of its resource, as GET
// /v1/leases?resource=<slot> shows it, with the permit in the token.
type permitHolderJSON struct {
	Permit   int    `json:"permit"`
	Resource string `json:"resource"`
	contenderJSON
	Transitions int64 `json:"transitions"` // the slot's grants
}

type waiterJSON struct {
	Value string `json:"value,omitempty"`
}

// semaphorePermits is how many permits the policy gives resource if it
// is a semaphore's own name; 0 for any other name, a semaphore's slot
// (pool/p1#2, observed and watched as the lock it is) included.
func (g *Gateway) semaphorePermits(resource string) int {
	k, err := g.cfg.Policy.Lease(nil, resource)
	if err != nil || k.Slot != 0 {
		return 0
	}
	return k.Permits()
}

// observeSemaphore answers GET /v1/leases for a semaphore of permits.
func (g *Gateway) observeSemaphore(w http.ResponseWriter, r *http.Request, semaphore string, permits int) {
	st, err := g.cfg.Authority.ObserveSemaphore(r.Context(), semaphore, permits)
	if err != nil {
		g.writeProblem(w, r, err, problemScope{Resource: semaphore})
		return
	}
	out := semaphoreStateJSON{Resource: st.Semaphore, Revision: st.Revision, Permits: st.Permits,
		Holders: []permitHolderJSON{}, Waiters: []waiterJSON{}, Waiting: st.Waiting,
		Transitions: st.Transitions(), Truncated: st.Waiting > int64(len(st.Waiters))}
	for _, s := range st.Slots {
		if s.Holder != nil {
			out.Holders = append(out.Holders, g.permitHolder(s))
		}
	}
	for _, c := range st.Waiters {
		out.Waiters = append(out.Waiters, waiterJSON{Value: c.Value})
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *Gateway) permitHolder(s authority.SlotState) permitHolderJSON {
	return permitHolderJSON{Permit: s.Permit, Resource: s.Resource, contenderJSON: g.contender(s.Resource, *s.Holder), Transitions: s.Transitions}
}

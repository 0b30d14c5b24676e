package outcome

// Outcome is what became of a write, as far as its answer can tell.
type Outcome int

const (
	// Applied: the write committed.
	Applied Outcome = iota
	// Refused: nothing was written, and the refusal is final: asked again,
	// the same request is refused again (a stale token, a failed
	// precondition, a bad request, a token the authority refuses).
	Refused
	// NotApplied: nothing was written by this attempt, and it may apply
	// if retried (PostgreSQL or etcd unavailable, a row lock wait run
	// out, a deadlock, the gateway overloaded).
	NotApplied
	// Unknown: the commit was sent and its answer lost or warned about,
	// or an earlier attempt with the key may still apply. Only a retry
	// with the same idempotency key can tell.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Refused:
		return "refused"
	case NotApplied:
		return "not-applied"
	}
	return "unknown"
}

// An Error declares the outcome of the write it ended.
type Error interface {
	error
	Outcome() Outcome
}

// A Settler declares whether a keyed write's refusal must become its
// idempotency key's outcome: it was decided against state that changes
// (a fence, a row, the authority's word on a lease), so another attempt
// with the key, queued somewhere or sent later, could otherwise be
// applied after this one was refused.
type Settler interface {
	error
	SettlesKey() bool
}

// Of says what err means for the write it ended: nil is Applied. Every
// error in err's tree may declare an outcome; the least certain wins,
// Unknown over Refused over NotApplied (a refusal is final whatever else
// failed; an unknown commit is unknown whatever was refused). An error
// that declares none is Unknown.
func Of(err error) Outcome {
	if err == nil {
		return Applied
	}
	var seen [Unknown + 1]bool
	declared := false
	walk(err, func(e error) bool {
		if d, ok := e.(Error); ok {
			seen[d.Outcome()], declared = true, true
		}
		return !seen[Unknown]
	})
	switch {
	case !declared, seen[Unknown]:
		return Unknown
	case seen[Refused]:
		return Refused
	case seen[NotApplied]:
		return NotApplied
	}
	return Unknown // only Applied declared: an error is never a success
}

// Declared reports whether err's tree declares an outcome at all: an
// error of the write path that does not is a defect (Of answers it
// Unknown).
func Declared(err error) bool {
	found := false
	walk(err, func(e error) bool {
		_, found = e.(Error)
		return !found
	})
	return found
}

// SettlesKey reports whether err, a keyed write's refusal, must become its
// idempotency key's outcome: the first error in err's tree that says
// decides; none says no. A refusal decided on the request alone (a key
// reused for another request, contradicting fences, a bad request) or on
// a token the authority never issued (storing it would let anyone who
// guesses a key spoil it for its owner) does not settle it.
func SettlesKey(err error) bool {
	settles := false
	walk(err, func(e error) bool {
		s, ok := e.(Settler)
		if ok {
			settles = s.SettlesKey()
		}
		return !ok
	})
	return settles
}

// walk visits err's tree depth first, as errors.As does, while visit
// returns true.
func walk(err error, visit func(error) bool) bool {
	if err == nil {
		return true
	}
	if !visit(err) {
		return false
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if !walk(e, visit) {
				return false
			}
		}
	}
	return true
}

// New returns a sentinel error of text that declares o. It says nothing
// of idempotency keys: it settles none.
func New(text string, o Outcome) error { return &sentinel{text: text, outcome: o} }

// NewSettling returns a sentinel refusal of text that settles its key:
// one decided against what the database held.
func NewSettling(text string) error {
	return &settling{sentinel{text: text, outcome: Refused}}
}

type sentinel struct {
	text    string
	outcome Outcome
}

func (e *sentinel) Error() string    { return e.text }
func (e *sentinel) Outcome() Outcome { return e.outcome }

type settling struct{ sentinel }

func (e *settling) SettlesKey() bool { return true }

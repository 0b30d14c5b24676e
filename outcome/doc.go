// Package outcome says what became of a write that ended in an error:
// applied, refused, not applied, or unknown. The packages whose errors can
// end a write (fence, tokens, authority, policy, gateway) declare it on
// the errors themselves, as pgx declares SafeToRetry on its own: a
// sentinel made by New, or a type with an Outcome method. The HTTP layer
// only translates an outcome into its wire form; it never decides one.
//
// # The rule every answer rests on
//
// A request is answered Applied only after the COMMIT that made it
// durable; Refused and NotApplied only when nothing of it can commit any
// more (a keyed request's refusal that SettlesKey is its key's outcome,
// stored, so that no other attempt with the key applies after it);
// Unknown whenever the commit may have happened, or may not last. An
// error whose tree declares no outcome is Unknown: a write that ended in
// an error nobody understood may have been applied.
package outcome

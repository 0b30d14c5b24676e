package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// SQLErrorMapping says how the gateway answers an SQLSTATE that a policy
// statement raised (an application trigger's RAISE, a function, a
// permission denied): with Status and the problem type
// urn:fencegw:problem:<Kind>, its detail the error's own message when
// Message is set (the application chose it for its clients), else a
// fixed text naming the SQLSTATE.
type SQLErrorMapping struct {
	Status  int
	Kind    string
	Message bool
}

// ApplicationClass is the SQLSTATE class an application raises for a
// status of its choosing without declaring it: PT409 answers 409 with
// the problem type urn:fencegw:problem:application and the message as its
// detail (as PostgREST reads PTxyz).
const ApplicationClass = "PT"

type fileSQLError struct {
	Status  int    `yaml:"status"`
	Type    string `yaml:"type"`
	Message bool   `yaml:"message"`
}

var (
	sqlstateRE = regexp.MustCompile(`^[0-9A-Z]{5}$`)
	kindRE     = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
)

// SQLError returns how the gateway answers SQLSTATE code raised by one of
// the policy's statements, if the policy or the PT class says.
func (p *Policy) SQLError(code string) (SQLErrorMapping, bool) {
	return lookupSQLError(p.sqlErrors, code)
}

// SQLError is Policy.SQLError for the policy op belongs to: fence asks it
// which of a statement's errors the policy answers itself.
func (op *Operation) SQLError(code string) (SQLErrorMapping, bool) {
	return lookupSQLError(op.sqlErrors, code)
}

func lookupSQLError(mapped map[string]SQLErrorMapping, code string) (SQLErrorMapping, bool) {
	if m, ok := mapped[code]; ok {
		return m, true
	}
	if len(code) == 5 && code[:2] == ApplicationClass {
		if n, err := strconv.Atoi(code[2:]); err == nil && n >= 400 && n <= 499 {
			return SQLErrorMapping{Status: n, Kind: "application", Message: true}, true
		}
	}
	return SQLErrorMapping{}, false
}

// SQLErrorMappings lists the policy's sql_errors, by SQLSTATE.
func (p *Policy) SQLErrorMappings() []SQLErrorMapping {
	out := make([]SQLErrorMapping, 0, len(p.sqlErrors))
	for _, code := range sortedKeys(p.sqlErrors) {
		out = append(out, p.sqlErrors[code])
	}
	return out
}

// retryClass reports the SQLSTATEs the gateway itself answers 503: the
// write may succeed if retried, which a mapped refusal would deny.
func retryClass(code string) bool {
	switch code[:2] {
	case "08", "40", "53", "57":
		return true
	}
	return code == "55P03"
}

// reservedKinds are fencegw's problem types that tell a client what to do
// (stop writing, retry, authenticate): an application's refusal must not
// read as one of them. precondition-failed, constraint, forbidden and
// bad-request mean what an application may mean too. A gateway test
// (TestOwnKindsAreReserved) holds this list to the gateway's table of
// problem types.
var reservedKinds = []string{"stale-token", "deadline-passed", "token-rejected", "token-retired", "token-required", "authority-halted", "unavailable",
	"internal", "locked", "lease-not-found", "idempotency-mismatch", "too-many-leases", "unauthorized",
	"unknown-operation", "not-found", "method-not-allowed", "too-large", "unsupported-media-type", "unsupported-encoding",
	"no-lock"}

// ReservedKinds returns the problem types an sql_errors entry may not take.
func ReservedKinds() []string { return slices.Clone(reservedKinds) }

// compileSQLErrors checks the sql_errors section: SQLSTATEs of five
// upper-case letters or digits, statuses 400 to 499 (the gateway's own
// 5xx carry outcomes an application cannot vouch for), problem types in
// the form of fencegw's own, and none of the codes fencegw raises itself.
func compileSQLErrors(ps *problems, p *Policy, section map[string]fileSQLError) {
	p.sqlErrors = map[string]SQLErrorMapping{}
	for _, code := range sortedKeys(section) {
		e, entry := section[code], "sql_errors."+code
		switch {
		case !sqlstateRE.MatchString(code):
			ps.add(entry, "not an SQLSTATE: five upper-case letters or digits, e.g. P0001 or 23514")
			continue
		case code[:2] == "FG":
			ps.add(entry, "class FG is fencegw's own (stale tokens, preconditions, the guard): it cannot be mapped")
			continue
		case retryClass(code):
			ps.add(entry, "the gateway answers this SQLSTATE 503 (retry: the connection, a deadlock or serialization failure, resources, a lock timeout, a shutdown); it cannot be mapped to a refusal")
			continue
		case slices.Contains(reservedKinds, e.Type):
			ps.add(entry+".type", "%q is one of fencegw's own problem types, which clients act on (stop writing, retry); choose another, e.g. over-reserved", e.Type)
			continue
		case e.Status < 400 || e.Status > 499:
			ps.add(entry+".status", "%d: want 400 to 499", e.Status)
			continue
		case !kindRE.MatchString(e.Type):
			ps.add(entry+".type", "%q: want lower-case letters, digits and '-', e.g. over-reserved (it becomes urn:fencegw:problem:<type>)", e.Type)
			continue
		}
		p.sqlErrors[code] = SQLErrorMapping{Status: e.Status, Kind: e.Type, Message: e.Message}
	}
	for _, op := range p.Operations {
		op.sqlErrors = p.sqlErrors
	}
}

// describeSQLErrors is the sql_errors part of Describe.
func (p *Policy) describeSQLErrors() string {
	if len(p.sqlErrors) == 0 {
		return ""
	}
	out := "sql_errors (and PT400-PT499 as themselves):\n"
	for _, code := range sortedKeys(p.sqlErrors) {
		m := p.sqlErrors[code]
		detail := "a fixed detail"
		if m.Message {
			detail = "the error's message as detail"
		}
		out += fmt.Sprintf("  %s -> %d urn:fencegw:problem:%s, %s\n", code, m.Status, m.Kind, detail)
	}
	return out
}

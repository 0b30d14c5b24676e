package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// leasePolicy has keys of one argument with a pattern, two arguments one
// an integer, two arguments side by side, and a lock-only entry; and
// clients of each scope.
var leasePolicy = strings.Replace(goodPolicy, "kinds:\n", "kinds:\n  pair:\n    template: \"pair/{a}{b}\"\n    lock_delay: 2s\n", 1) + `
  pair:
    resource: pair
    args:
      a: {type: string, max_length: 3}
      b: {type: integer, min: 0, max: 99}
    statements:
      - sql: SELECT :a AS a, :b AS b
leases:
  election: "election/{group}"
clients:
  billing: {token_sha256: "` + strings.Repeat("1", 64) + `", operations: [debit]}
  scheduler: {token_sha256: "` + strings.Repeat("2", 64) + `", operations: [run], leases: [election]}
  operator: {token_sha256: "` + strings.Repeat("3", 64) + `", operations: ["*"], leases: ["*"]}
`

func leasePolicyParsed(t testing.TB) *Policy {
	t.Helper()
	p, err := Parse("leases.yaml", []byte(leasePolicy))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLeaseNames(t *testing.T) {
	p := leasePolicyParsed(t)
	client := func(name string) *Client {
		for _, c := range p.clientsByName() {
			if c.Name == name {
				return c
			}
		}
		return nil
	}
	tests := []struct {
		name, lease, client string
		kind                string // the resource or lock-only entry; "" when refused
		err                 error
	}{
		{"an account", "account/acct-7", "", "account", nil},
		{"an account, by its writer", "account/acct-7", "billing", "account", nil},
		{"an account, by another's client", "account/acct-7", "scheduler", "", ErrLeaseNotAllowed},
		{"an account, by the operator", "account/acct-7", "operator", "account", nil},
		{"no argument matches", "account/zzz", "", "", ErrUnknownLease},
		{"too long for the argument", "account/acct-12345", "", "", ErrUnknownLease},
		{"empty argument", "account/", "", "", ErrUnknownLease},
		{"no key's literals", "accounts/acct-7", "", "", ErrUnknownLease},
		{"two values", "job/2026-10-18/3", "scheduler", "job", nil},
		{"an integer not as rendered", "job/2026-10-18/03", "", "", ErrUnknownLease},
		{"an integer with a sign", "job/2026-10-18/+3", "", "", ErrUnknownLease},
		{"negative integer", "job/d/-3", "", "job", nil},
		{"a string with the separator", "job/a/b/7", "", "job", nil},
		{"side by side", "pair/ab12", "operator", "pair", nil},
		{"side by side, integer out of range", "pair/ab1234", "", "", ErrUnknownLease},
		{"side by side, string too long", "pair/abcd1", "", "", ErrUnknownLease},
		{"lock-only", "election/billing", "scheduler", "election", nil},
		{"lock-only, not listed", "election/billing", "billing", "", ErrLeaseNotAllowed},
		{"lock-only, any listed", "election/x/y", "operator", "election", nil},
		{"lock-only, empty placeholder", "election/", "", "", ErrUnknownLease},
		{"nothing", "r", "", "", ErrUnknownLease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *Client
			if tt.client != "" {
				c = client(tt.client)
			}
			k, err := p.Lease(c, tt.lease)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Lease(%s, %q) = %+v, %v; want %v", tt.client, tt.lease, k, err, tt.err)
				}
				if !strings.Contains(err.Error(), tt.lease) {
					t.Errorf("error %q does not name the lease", err)
				}
				return
			}
			got := k.LockOnly
			if k.ResourceKind != nil {
				got = k.ResourceKind.Name
			}
			if err != nil || got != tt.kind {
				t.Fatalf("Lease(%s, %q) = %q, %v; want %q", tt.client, tt.lease, got, err, tt.kind)
			}
		})
	}
	if k, _ := p.Lease(nil, "pair/a1"); k.LockDelay() != 2*time.Second {
		t.Errorf("pair's lock delay = %s, want its resource's 2s", k.LockDelay())
	}
	if k, _ := p.Lease(nil, "election/a"); k.LockDelay() != 0 {
		t.Errorf("a lock-only lease's lock delay = %s, want none", k.LockDelay())
	}
}

func TestLeaseEntriesChecked(t *testing.T) {
	for _, tt := range []struct{ name, edit, entry string }{
		{"a bad template", `election: "election/{group"`, "leases.election"},
		{"a resource's shape", `election: "account/{who}"`, "leases.election"},
		{"a bad name", `Election: "election/{group}"`, "leases.Election"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(leasePolicy, `election: "election/{group}"`, tt.edit, 1)
			_, err := Parse("leases.yaml", []byte(src))
			var pe *Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.entry+":") {
				t.Fatalf("Parse = %v, want a problem with %s", err, tt.entry)
			}
		})
	}
	src := strings.Replace(leasePolicy, "leases: [election]", "leases: [elections]", 1)
	if _, err := Parse("leases.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), `clients.scheduler.leases: unknown lock-only lease "elections"`) {
		t.Fatalf("a client listing an undeclared entry: %v", err)
	}
}

// FuzzLeaseNames holds each key's matcher to the key's rendering: a name
// it matches is the rendering of the values it found, each one the
// argument's declaration accepts; and the rendering of values the
// declarations accept is a name it matches.
func FuzzLeaseNames(f *testing.F) {
	p := leasePolicyParsed(f)
	for _, seed := range []struct {
		name, a string
		n       int64
	}{
		{"account/acct-7", "acct-1", 7}, {"job/a/b/-0", "a/b", -1}, {"pair/ab12", "ab", 12}, {"pair/a1b2", "", 0},
		{"election/x", "x", 1}, {"job//0", "\x00", 1 << 62}, {"account/acct-1acct-2", "é", 99},
	} {
		f.Add(seed.name, seed.a, seed.n)
	}
	f.Fuzz(func(t *testing.T, name, a string, n int64) {
		for _, w := range p.writers {
			if vals, ok := w.matcher.match(name); ok {
				byArg := map[string]any{}
				for _, part := range w.matcher.parts {
					if part.value {
						if !part.accepts(vals[0]) {
							t.Fatalf("%s: %q matched with value %q, which %s does not accept", w.role.Template, name, vals[0], part.arg.Name)
						}
						byArg[part.arg.Name] = converted(t, part.arg, vals[0])
						vals = vals[1:]
					}
				}
				if got := w.role.Template.render(func(arg string) any { return byArg[arg] }); got != name {
					t.Fatalf("%s: %q matched, but its values render %q", w.role.Template, name, got)
				}
			}
			vals := Values(make([]any, len(w.op.Args)))
			for i, arg := range w.op.Args {
				var err error
				if arg.Type == Integer {
					vals[i], err = arg.convert(json.Number(jsonInt(n)))
				} else {
					vals[i], err = arg.convert(a)
				}
				if err != nil {
					vals = nil
					break
				}
			}
			if vals == nil {
				continue
			}
			key := w.role.Template.render(func(arg string) any { return vals[w.op.argIndex[arg]] })
			if tokens.CheckResource(key) != nil {
				continue
			}
			if _, ok := w.matcher.match(key); !ok {
				t.Fatalf("%s renders %q from accepted values, and its matcher refuses it", w.role.Template, key)
			}
		}
		for _, l := range p.lockOnly {
			if vals, ok := l.matcher.match(name); ok {
				byArg := map[string]any{}
				for i, a := range l.key.args() {
					byArg[a] = vals[i]
				}
				if got := l.key.render(func(arg string) any { return byArg[arg] }); got != name || slicesContainEmpty(vals) {
					t.Fatalf("lock-only %s: %q matched with values %q", l.key, name, vals)
				}
			}
		}
	})
}

func converted(t *testing.T, a *Arg, v string) any {
	t.Helper()
	var in any = v
	if a.Type == Integer {
		in = json.Number(v)
	}
	out, err := a.convert(in)
	if err != nil {
		t.Fatalf("arg %s refuses %q: %v", a.Name, v, err)
	}
	return out
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func slicesContainEmpty(vals []string) bool {
	for _, v := range vals {
		if v == "" {
			return true
		}
	}
	return false
}

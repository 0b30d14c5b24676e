package check

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

func isChurn(res string) bool { return strings.HasPrefix(res, "churn/") }

// grant is a lease granted on res with token 1:rev, asked for at sec and
// answered at sec+1.
func grant(sec, worker int, res string, rev int64, end string) Grant {
	return Grant{Worker: worker, Resource: res, Token: tokens.Token{Epoch: 1, Revision: rev},
		Asked: t0.Add(time.Duration(sec) * time.Second), Granted: t0.Add(time.Duration(sec+1) * time.Second), End: end}
}

// TestChurn: leases on churn resources, one write each. In commit order
// their tokens must strictly increase from holder to holder: a lower one
// is a stale write (the fence let an older holder in after a newer one),
// an equal one of another worker is a token reused; one holder may write
// twice with its token, and on any other resource an equal token is a
// lease's next write.
func TestChurn(t *testing.T) {
	history := concat(
		write(0, 1, TypeOK, "a", "churn/r0", "1:10"),
		write(2, 2, TypeOK, "b", "churn/r0", "1:20"),
		write(4, 1, TypeInfo, "c", "churn/r0", "1:10"),
		write(4, 3, TypeOK, "d", "churn/r0", "1:20"),
		write(6, 4, TypeFail, "e", "churn/r1", "1:5"),
		write(0, 1, TypeOK, "f", "res/r0", "1:10"),
		write(2, 1, TypeOK, "g", "res/r0", "1:10"),
	)
	history[len(history)-5].Detail = "stale-token" // e's refusal
	tests := []struct {
		name string
		rows []Row
		want []found
	}{
		{"increasing", []Row{row(1, "churn/r0", 1, 10, "a", 1), row(2, "churn/r0", 1, 20, "b", 2), row(3, "res/r0", 1, 10, "f", 1), row(4, "res/r0", 1, 10, "g", 1)}, []found{}},
		{"an older holder after a newer one", []Row{row(1, "churn/r0", 1, 10, "a", 1), row(2, "churn/r0", 1, 20, "b", 2), row(3, "churn/r0", 1, 10, "c", 1)},
			[]found{{KindStaleWrite, "churn/r0", "2,3"}}},
		{"two leases with one token", []Row{row(1, "churn/r0", 1, 10, "a", 1), row(2, "churn/r0", 1, 20, "b", 2), row(3, "churn/r0", 1, 20, "d", 3)},
			[]found{{KindTokenReused, "churn/r0", "2,3"}}},
		{"one holder's two writes with its token", []Row{row(1, "churn/r0", 1, 10, "a", 1), row(2, "churn/r0", 1, 20, "b", 2), row(3, "churn/r0", 1, 20, "d", 2)}, []found{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Input{History: history, Rows: tt.rows, Churn: isChurn})
			if kinds := summarizeKinds(got.Violations, KindStaleWrite, KindTokenReused); !slices.Equal(kinds, tt.want) {
				t.Fatalf("violations %+v, want %+v", kinds, tt.want)
			}
		})
	}

	grants := []Grant{grant(0, 1, "churn/r0", 10, GrantEndRelease), grant(2, 2, "churn/r0", 20, GrantEndExpire), grant(6, 3, "churn/r1", 5, GrantEndPause), grant(8, 1, "res/r0", 30, "")}
	rows := []Row{row(1, "churn/r0", 1, 10, "a", 1), row(2, "churn/r0", 1, 20, "b", 2), row(3, "res/r0", 1, 10, "f", 1)}
	got := Check(Input{History: history, Rows: rows, Churn: isChurn, Grants: grants}).Churn
	want := map[string]int{"grants": 3, "leases-released": 1, "leases-left-to-expire": 1, "holders-paused-past-ttl": 1,
		"writes-applied": 2, "writes-refused-stale": 1, "resources-written": 1}
	if !maps.Equal(got, want) {
		t.Errorf("churn %v, want %v", got, want)
	}
	if got := Check(Input{History: history, Rows: rows}).Churn; got != nil {
		t.Errorf("churn %v without churn resources, want nil", got)
	}
}

// TestCheckGrants: a lease asked for after another's grant was answered
// has the newer token (etcd's revisions only grow); grants whose calls
// overlap may come in either order; no two grants share a token.
func TestCheckGrants(t *testing.T) {
	late := grant(0, 2, "churn/r0", 10, "")
	late.Granted = t0.Add(5 * time.Second) // answered after the next grant's
	tests := []struct {
		name   string
		grants []Grant
		want   []found
	}{
		{"in order", []Grant{grant(0, 1, "churn/r0", 10, ""), grant(2, 2, "churn/r0", 20, ""), grant(4, 1, "churn/r0", 30, "")}, []found{}},
		{"overlapping calls, either order", []Grant{late, grant(2, 1, "churn/r0", 20, "")}, []found{}},
		{"other resources are their own", []Grant{grant(0, 1, "churn/r0", 20, ""), grant(2, 2, "churn/r1", 10, "")}, []found{}},
		{"older token asked for after a newer grant", []Grant{grant(0, 1, "churn/r0", 20, ""), grant(2, 2, "churn/r0", 30, ""), grant(4, 3, "churn/r0", 25, "")},
			[]found{{KindGrantNotNewer, "churn/r0", ""}}},
		{"one token granted twice", []Grant{grant(0, 1, "churn/r0", 20, ""), late, grant(2, 3, "churn/r0", 20, "")},
			[]found{{KindGrantNotNewer, "churn/r0", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(Check(Input{Grants: tt.grants, Churn: isChurn}).Violations)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("violations %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReadGrants(t *testing.T) {
	const line = `{"worker":1,"resource":"churn/r0","token":"1:10","asked":"2026-01-02T03:04:05Z","granted":"2026-01-02T03:04:06Z","end":"release"}`
	got, err := ReadGrants(strings.NewReader(line + "\n" + line[:30]))
	if want := []Grant{grant(0, 1, "churn/r0", 10, GrantEndRelease)}; err != nil || !slices.EqualFunc(got, want, sameGrant) {
		t.Fatalf("ReadGrants = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{
		strings.Replace(line, `"1:10"`, `"ten"`, 1),
		strings.Replace(line, `"churn/r0"`, `""`, 1),
		strings.Replace(line, `"end"`, `"ending"`, 1),
		strings.Replace(line, `"1:10"`, `"1:10:c2lnbmF0dXJlc2lnbmF0dXJlc2ln"`, 1),
	} {
		if _, err := ReadGrants(strings.NewReader(bad + "\n")); err == nil {
			t.Errorf("ReadGrants(%s) = nil error, want one", bad)
		}
	}
}

func sameGrant(a, b Grant) bool {
	return a.Worker == b.Worker && a.Resource == b.Resource && a.Token == b.Token && a.Asked.Equal(b.Asked) && a.Granted.Equal(b.Granted) && a.End == b.End
}

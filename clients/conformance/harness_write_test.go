package conformance_test

import (
	"time"
)

// The scenarios of writes: retries under a key, batches, reads, checks,
// deadlines, and the problems a write meets.
func init() {
	harnesses["commit-cut"] = harness{
		steps: map[string]func(*run, map[string]any) map[string]any{
			"holding": func(s *run, _ map[string]any) map[string]any {
				s.e.proxy.push("write", loseAnswer)
				return nil
			},
		},
		check: func(s *run, _ map[string]any) { s.checkAppliedOnce(2) },
	}

	harnesses["unavailable-retried"] = harness{
		steps: map[string]func(*run, map[string]any) map[string]any{
			"holding": func(s *run, _ map[string]any) map[string]any {
				s.e.proxy.push("write",
					serve(503, "application/problem+json", `{"type":"urn:fencegw:problem:unavailable","title":"Service unavailable","status":503,"outcome":"not-applied"}`),
					page502)
				return nil
			},
		},
		check: func(s *run, _ map[string]any) { s.checkAppliedOnce(3) },
	}

	harnesses["batch"] = harness{
		check: func(s *run, _ map[string]any) {
			p := s.sc.Params
			// The first batch applied, the refused one not at all.
			for account, want := range map[string]int64{p.str("a"): 995, p.str("b"): 1005} {
				if got := s.e.balance(s.t, account); got != want {
					s.t.Errorf("%s's balance %d, want %d", account, got, want)
				}
			}
			s.checkFree("account/" + p.str("a"))
			s.checkFree("account/" + p.str("b"))
		},
	}

	harnesses["read-check-deadline"] = harness{
		check: func(s *run, _ map[string]any) {
			n := 0
			for _, r := range s.e.proxy.requests("write") {
				if r.NotAfter == "" {
					continue
				}
				n++
				if _, err := time.Parse(time.RFC3339Nano, r.NotAfter); err != nil {
					s.t.Errorf("Fencing-Not-After %q: %v", r.NotAfter, err)
				}
			}
			if n != 2 {
				s.t.Errorf("%d writes carried Fencing-Not-After, want 2", n)
			}
			s.checkFree(s.sc.Params.str("resource"))
		},
	}

	harnesses["problem-types-real"] = harness{
		check: func(s *run, observed map[string]any) {
			// Each refusal is final: sent once, never again.
			if sent, got := num(observed["writes_sent"]), s.e.proxy.count("write"); sent < 10 || int(sent) != got {
				s.t.Errorf("the runner made %v write calls and the gateway got %d writes: want as many, each refusal sent once", sent, got)
			}
			s.checkFree(s.sc.Params.str("resource"))
		},
	}

	harnesses["problem-types-injected"] = harness{
		steps: map[string]func(*run, map[string]any) map[string]any{
			"inject": func(s *run, data map[string]any) map[string]any {
				for _, c := range s.sc.Cases {
					if c.Case == str(data["case"]) {
						s.e.proxy.setAlways("check", c.answer())
						return nil
					}
				}
				s.t.Errorf("no case %q", data["case"])
				return nil
			},
		},
		check: func(s *run, observed map[string]any) {
			got, _ := observed["got"].(map[string]any)
			for _, c := range s.sc.Cases {
				if g := str(got[c.Case]); g != c.want() {
					s.t.Errorf("case %s: the client's error is named %q, want %q", c.Case, g, c.want())
				}
			}
		},
	}
}

// checkAppliedOnce: the scenario's one debit reached the gateway in
// attempts requests under one Idempotency-Key, and was applied once.
func (s *run) checkAppliedOnce(attempts int) {
	reqs := s.e.proxy.requests("write")
	if len(reqs) != attempts {
		s.t.Errorf("%d write requests, want %d", len(reqs), attempts)
	}
	for _, r := range reqs {
		if r.IdempotencyKey == "" || r.IdempotencyKey != reqs[0].IdempotencyKey {
			s.t.Errorf("write requests under keys %+v: want one key, on every attempt", reqs)
			break
		}
	}
	p := s.sc.Params
	if n := s.e.count(s.t, "SELECT count(*) FROM demo.write_log WHERE account = $1", p.str("account")); n != 1 {
		s.t.Errorf("%d debits of %s applied, want 1", n, p.str("account"))
	}
	if got, want := s.e.balance(s.t, p.str("account")), 1000-int64(p.num("amount_cents")); got != want {
		s.t.Errorf("balance %d, want %d", got, want)
	}
	s.checkFree(p.str("resource"))
}

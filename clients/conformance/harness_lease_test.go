package conformance_test

import (
	"slices"
	"syscall"
	"time"

	"github.com/fencegw/fencegw/client"
)

// The scenarios of the lease loop: acquisition, waiting, loss.
func init() {
	harnesses["acquire-release"] = harness{
		check: func(s *run, observed map[string]any) {
			toks, _ := observed["tokens"].([]any)
			if len(toks) != 2 || !after(str(toks[1]), str(toks[0])) {
				s.t.Errorf("tokens %v: want two, the second after the first", toks)
			}
			s.checkFree(s.sc.Params.str("resource"))
		},
	}

	harnesses["acquire-answer-lost"] = harness{
		setup: func(s *run, _ *gatewaySpec, _ map[string]any) { s.e.proxy.push("acquire", loseAnswer) },
		steps: map[string]func(*run, map[string]any) map[string]any{
			"holding": func(s *run, data map[string]any) map[string]any {
				st := s.observe(s.sc.Params.str("resource"))
				if st == nil || st.Holder == nil || st.Holder.Token != str(data["token"]) || st.Waiting != 0 {
					s.t.Errorf("the lock: %+v; want it held by the runner's lease (%s) and nobody waiting", st, data["token"])
				}
				reqs := s.e.proxy.requests("acquire")
				if len(reqs) != 2 || reqs[0].IdempotencyKey == "" || reqs[0].IdempotencyKey != reqs[1].IdempotencyKey {
					s.t.Errorf("acquisitions %+v: want the first and its retry, under one Idempotency-Key", reqs)
				}
				return nil
			},
		},
		check: func(s *run, _ map[string]any) { s.checkFree(s.sc.Params.str("resource")) },
	}

	harnesses["fifo"] = harness{
		setup: func(s *run, _ *gatewaySpec, _ map[string]any) {
			s.state["holder"] = s.acquire(s.sc.Params.str("resource"), client.AcquireOptions{TTL: 30 * time.Second})
		},
		steps: map[string]func(*run, map[string]any) map[string]any{
			"waiter-1": func(s *run, _ map[string]any) map[string]any {
				s.waitFor("the first waiter in line", func() bool { return s.waiting() >= 1 })
				return nil
			},
			"waiter-2": func(s *run, _ map[string]any) map[string]any {
				s.waitFor("the second waiter in line", func() bool { return s.waiting() >= 2 })
				if l, _ := s.state["holder"].(*client.Lease); l != nil {
					if err := l.Release(s.ctx); err != nil {
						return harnessError(err)
					}
				}
				return nil
			},
		},
		check: func(s *run, _ map[string]any) { s.checkFree(s.sc.Params.str("resource")) },
	}

	harnesses["gc-pause"] = harness{
		setup: func(s *run, _ *gatewaySpec, _ map[string]any) {
			events, err := s.e.client.Watch(s.ctx, s.sc.Params.str("resource"))
			if err != nil {
				s.t.Errorf("watch: %v", err)
				return
			}
			s.state["events"] = events
		},
		steps: map[string]func(*run, map[string]any) map[string]any{"paused": gcPause},
		check: func(s *run, observed map[string]any) {
			successor, _ := s.state["successor"].(string)
			if got := str(observed["current_token"]); got != successor {
				s.t.Errorf("the refusal's current_token %q, want the successor's %q", got, successor)
			}
			if w := str(observed["write_in_block"]); w != "lease-lost" && w != "lease-expired" {
				s.t.Errorf("write_in_block %q, want lease-lost or lease-expired", w)
			}
			st := s.observe(s.sc.Params.str("resource"))
			if st == nil || st.Holder == nil || st.Holder.Token != successor || st.Waiting != 0 {
				s.t.Errorf("the lock after the runner's loss: %+v; want the successor holding it and nobody waiting (no re-acquisition)", st)
			}
			if n := s.e.proxy.count("acquire"); n != 1 {
				s.t.Errorf("the runner sent %d acquisitions, want 1: no re-acquisition after the loss", n)
			}
			// The runner's first debit and the successor's: the late one
			// was refused.
			if n := s.e.count(s.t, "SELECT count(*) FROM demo.write_log WHERE account = $1", s.sc.Params.str("account")); n != 2 {
				s.t.Errorf("%d writes of %s applied, want 2", n, s.sc.Params.str("account"))
			}
		},
	}

	harnesses["keepalive-refused"] = harness{
		steps: map[string]func(*run, map[string]any) map[string]any{
			"holding": func(s *run, data map[string]any) map[string]any {
				_, err := s.e.client.Revoke(s.ctx, client.RevokeRequest{LeaseID: str(data["lease_id"]), Reason: "conformance: keepalive refused"})
				if err != nil {
					s.t.Errorf("revoke: %v", err)
					return harnessError(err)
				}
				return nil
			},
		},
		check: func(s *run, _ map[string]any) {
			s.checkFree(s.sc.Params.str("resource"))
			if n := s.e.proxy.count("acquire"); n != 1 {
				s.t.Errorf("the runner sent %d acquisitions, want 1: no re-acquisition after the loss", n)
			}
		},
	}

	harnesses["slow-grant"] = harness{
		setup: func(s *run, _ *gatewaySpec, _ map[string]any) {
			s.e.proxy.push("acquire", delayAnswer(time.Duration(s.sc.Params.num("delay")*float64(time.Second))))
			s.e.proxy.setAlways("keepalive", page503)
		},
		check: func(s *run, observed map[string]any) {
			// Counted from the request, the deadline is TTL less the
			// margin after it was sent; counted from the answer, it would
			// be the delay later. Half the delay tells them apart, with
			// room for a slow machine between the runner's reading of its
			// clock and the request.
			p := s.sc.Params
			span, most := num(observed["deadline_span"]), p.num("ttl")-p.num("safety_margin")+p.num("delay")/2
			if span <= 0 || span > most {
				s.t.Errorf("the local deadline %.3f s after the request, want at most %.3f: counted from when it was sent", span, most)
			}
			if n := s.e.proxy.count("write"); n != 0 {
				s.t.Errorf("%d writes reached the gateway, want none after the local deadline", n)
			}
		},
	}

	harnesses["replica-killed"] = harness{
		setup: func(s *run, gw *gatewaySpec, _ map[string]any) {
			first := s.e.startReplica(s.t, s.e.dbURL, conformancePolicy(s.t), nil)
			s.state["first"] = first
			gw.URLs = []string{first.URL, s.e.proxy.URL}
		},
		steps: map[string]func(*run, map[string]any) map[string]any{
			"holding": func(s *run, _ map[string]any) map[string]any {
				first := s.state["first"].(*replica)
				if first.count("acquire") == 0 {
					s.t.Errorf("the runner did not ask the first replica first")
				}
				first.Kill()
				s.state["keepalives"], s.state["writes"] = s.e.proxy.count("keepalive"), s.e.proxy.count("write")
				return nil
			},
		},
		check: func(s *run, _ map[string]any) {
			k, _ := s.state["keepalives"].(int)
			w, _ := s.state["writes"].(int)
			if n := s.e.proxy.count("keepalive") - k; n < int(s.sc.Params.num("renewals")) {
				s.t.Errorf("%d keepalives through the second replica after the first was killed, want %v", n, s.sc.Params["renewals"])
			}
			if n := s.e.proxy.count("write") - w; n < int(s.sc.Params.num("writes"))+1 {
				s.t.Errorf("%d writes through the second replica after the first was killed, want %v", n, s.sc.Params.num("writes")+1)
			}
		},
	}

	harnesses["multi-lock"] = harness{
		setup: func(s *run, _ *gatewaySpec, _ map[string]any) {
			s.state["held"] = s.acquire(s.sc.Params.str("held"), client.AcquireOptions{TTL: 30 * time.Second})
		},
		steps: map[string]func(*run, map[string]any) map[string]any{
			"refused": func(s *run, _ map[string]any) map[string]any {
				r := s.sc.Params.strs("resources")[0]
				if st := s.observe(r); st != nil && (st.Holder != nil || st.Waiting != 0) {
					s.t.Errorf("%s after the refused lock: %+v; want it free: all or none", r, st)
				}
				return nil
			},
		},
		check: func(s *run, _ map[string]any) {
			p := s.sc.Params
			var got []string
			for _, r := range s.e.proxy.requests("acquire") {
				got = append(got, r.Resource)
			}
			rs := p.strs("resources")
			first := []string{rs[0], p.str("held")}
			slices.Sort(first)
			second := slices.Sorted(slices.Values(rs))
			if want := append(first, second...); !slices.Equal(got, want) {
				s.t.Errorf("acquisitions %v, want %v: each lock's resources in canonical order", got, want)
			}
			for account, want := range map[string]int64{p.str("from"): 1000 - int64(p.num("amount_cents")), p.str("to"): 1000 + int64(p.num("amount_cents"))} {
				if got := s.e.balance(s.t, account); got != want {
					s.t.Errorf("%s's balance %d, want %d", account, got, want)
				}
			}
			for _, r := range rs {
				s.checkFree(r)
			}
		},
	}

	harnesses["semaphore"] = harness{
		check: func(s *run, _ map[string]any) { s.checkFree(s.sc.Params.str("resource")) },
	}
}

// waiting is how many leases wait for the scenario's resource.
func (s *run) waiting() int64 {
	st, err := s.e.client.Observe(s.ctx, s.sc.Params.str("resource"))
	if err != nil {
		return -1
	}
	return st.Waiting
}

// gcPause is the seed's timeline around the frozen runner: SIGSTOP, the
// lease's expiry (a watch event, not a sleep), a successor's lease and
// write, SIGCONT.
func gcPause(s *run, data map[string]any) map[string]any {
	events, _ := s.state["events"].(<-chan client.WatchEvent)
	pid := s.p.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return harnessError(err)
	}
	defer func() {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			s.t.Errorf("SIGCONT: %v", err)
		}
	}()
	token := str(data["token"])
	expired := false
	timeout := time.After(eventTimeout)
	for !expired {
		select {
		case ev, ok := <-events:
			if !ok {
				s.t.Errorf("the watch ended before the runner's lease expired")
				return nil
			}
			expired = ev.Type == "expired" && ev.Holder != nil && ev.Holder.Token == token
		case <-timeout:
			s.t.Errorf("the runner's lease %s did not expire in %s while the runner was frozen", token, eventTimeout)
			return nil
		}
	}
	p := s.sc.Params
	b := s.acquire(p.str("resource"), client.AcquireOptions{TTL: 30 * time.Second, Wait: 10 * time.Second})
	if b == nil {
		return nil
	}
	if _, err := b.Write(s.ctx, "debit", map[string]any{"account": p.str("account"), "amount_cents": p.num("amount_cents")}); err != nil {
		s.t.Errorf("the successor's write: %v", err)
	}
	s.state["successor"] = client.Unsigned(b.Token())
	return map[string]any{"successor": client.Unsigned(b.Token())}
}

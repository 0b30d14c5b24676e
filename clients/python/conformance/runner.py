"""The Python client's conformance runner: runs the scenarios of
clients/conformance/scenarios.json with package fencegw, speaking the
runner protocol of clients/conformance/README.md on stdin and stdout.

    python3 -u runner.py SCENARIOS.json
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import fencegw  # noqa: E402
from fencegw import TLS, Gateway, unsigned  # noqa: E402

# The protocol's names of the client's errors (README.md, "Names of
# outcomes"), by the error's own class: a client without a class of its
# own for a problem type names it "problem", and fails.
NAMES = {
    fencegw.BadRequest: "bad-request",
    fencegw.Unauthorized: "unauthorized",
    fencegw.TokenRejected: "token-rejected",
    fencegw.TokenRetired: "token-retired",
    fencegw.Forbidden: "forbidden",
    fencegw.UnknownOperation: "unknown-operation",
    fencegw.LeaseNotFound: "lease-not-found",
    fencegw.NotFound: "not-found",
    fencegw.NoLock: "no-lock",
    fencegw.MethodNotAllowed: "method-not-allowed",
    fencegw.StaleToken: "stale-token",
    fencegw.DeadlinePassed: "deadline-passed",
    fencegw.PreconditionFailed: "precondition-failed",
    fencegw.Constraint: "constraint",
    fencegw.Locked: "locked",
    fencegw.TooLarge: "too-large",
    fencegw.UnsupportedMediaType: "unsupported-media-type",
    fencegw.UnsupportedEncoding: "unsupported-encoding",
    fencegw.IdempotencyMismatch: "idempotency-mismatch",
    fencegw.TokenRequired: "token-required",
    fencegw.TooManyLeases: "too-many-leases",
    fencegw.InternalError: "internal",
    fencegw.ApplicationError: "application",
    fencegw.Unavailable: "unavailable",
    fencegw.AuthorityHalted: "authority-halted",
    fencegw.GatewayUnreachable: "unreachable",
    fencegw.ProblemError: "problem",
    fencegw.LeaseLost: "lease-lost",
    fencegw.LeaseExpired: "lease-expired",
    fencegw.LeaseReleased: "lease-released",
    fencegw.UnexpectedResponse: "unexpected-response",
    fencegw.ConfigurationError: "bad-options",
}


def name(err: Optional[BaseException]) -> str:
    if err is None:
        return "ok"
    return NAMES.get(type(err), "other")


def outcome(f: Callable[[], Any]) -> str:
    """The name of what calling f came to."""
    try:
        f()
    except fencegw.FencegwError as e:
        return name(e)
    return "ok"


class Run:
    """One scenario under way."""

    def __init__(self, sc: Dict[str, Any], setup: Dict[str, Any]) -> None:
        self.sc = sc
        self.p: Dict[str, Any] = sc.get("params", {})
        self.spec: Dict[str, Any] = setup.get("gateway", {})
        self.vars: Dict[str, Any] = setup.get("vars") or {}
        self.observe: Dict[str, Any] = {}
        self.gw = gateway(self.spec)

    def ready(self, step: str, data: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        emit({"event": "ready", "scenario": self.sc["id"], "step": step, "data": data or {}})
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        return json.loads(line).get("data") or {}

    def debit(self, cents: float) -> Dict[str, Any]:
        return {"account": self.p["account"], "amount_cents": cents}


def gateway(spec: Dict[str, Any], bearer_file: str = "") -> Gateway:
    tls = None
    if spec.get("ca_file") or spec.get("cert_file"):
        tls = TLS(ca_file=spec.get("ca_file") or None,
                  cert_file=None if bearer_file else spec.get("cert_file") or None,
                  key_file=None if bearer_file else spec.get("key_file") or None)
    return Gateway(spec["urls"], tls=tls, bearer=spec.get("bearer") or None,
                   bearer_file=bearer_file or spec.get("bearer_file") or None)


def emit(obj: Dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


SCENARIOS: Dict[str, Callable[[Run], None]] = {}


def scenario(f: Callable[[Run], None]) -> Callable[[Run], None]:
    SCENARIOS[f.__name__.replace("_", "-")] = f
    return f


# The lease loop.


@scenario
def acquire_release(r: Run) -> None:
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        r.observe["write"] = outcome(lambda: lease.write("debit", r.debit(r.p["amount_cents"])))
        first = unsigned(lease.token)
    try:
        with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as again:
            r.observe["reacquire"] = "ok"
            r.observe["tokens"] = [first, unsigned(again.token)]
    except fencegw.FencegwError as e:
        r.observe["reacquire"] = name(e)


@scenario
def acquire_answer_lost(r: Run) -> None:
    try:
        with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
            r.observe["acquire"] = "ok"
            r.ready("holding", {"token": unsigned(lease.token)})
    except fencegw.FencegwError as e:
        r.observe["acquire"] = name(e)


@scenario
def fifo(r: Run) -> None:
    order: List[int] = []
    errors: List[BaseException] = []
    mu = threading.Lock()

    def waiter(i: int) -> None:
        try:
            lease = r.gw.acquire(r.p["resource"], ttl=r.p["ttl"], wait=r.p["wait"])
        except BaseException as e:
            with mu:
                errors.append(e)
            return
        with mu:
            order.append(i)
        lease.release()

    threads = []
    for i in range(1, int(r.p["waiters"]) + 1):
        t = threading.Thread(target=waiter, args=(i,))
        t.start()
        threads.append(t)
        r.ready("waiter-%d" % i)
    for t in threads:
        t.join()
    r.observe["order"] = order
    if errors:
        raise errors[0]


@scenario
def gc_pause(r: Run) -> None:
    args = r.debit(r.p["amount_cents"])
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        r.observe["first_write"] = outcome(lambda: lease.write("debit", args))
        # The write prepared before the pause, past every local check.
        token = lease.token
        r.ready("paused", {"token": unsigned(token)})
        try:
            r.gw.write("debit", args, token=token)
            r.observe["stale_write"] = "ok"
        except fencegw.StaleToken as e:
            r.observe["stale_write"] = name(e)
            r.observe["current_token"] = e.current_token
        except fencegw.FencegwError as e:
            r.observe["stale_write"] = name(e)
        r.observe["lost"] = lease.lost.wait(30)
        r.observe["write_in_block"] = outcome(lambda: lease.write("debit", args))


@scenario
def keepalive_refused(r: Run) -> None:
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        r.ready("holding", {"lease_id": lease.id})
        lost = lease.lost.wait(30)
        r.observe["before_deadline"] = lost and time.monotonic() < lease.deadline
        r.observe["lost"] = lost
        r.observe["reason"] = name(lease.error)
        r.observe["write_in_block"] = outcome(lambda: lease.write("debit", r.debit(1)))


@scenario
def slow_grant(r: Run) -> None:
    before = time.monotonic()
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"], safety_margin=r.p["safety_margin"]) as lease:
        r.observe["deadline_span"] = lease.deadline - before
        lease.lost.wait(30)
        r.observe["reason"] = name(lease.error)
        r.observe["write_in_block"] = outcome(lambda: lease.write("debit", r.debit(1)))


@scenario
def replica_killed(r: Run) -> None:
    args = r.debit(r.p["amount_cents"])
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        lease.write("debit", args)
        r.ready("holding")
        writes = [outcome(lambda: lease.write("debit", args)) for _ in range(int(r.p["writes"]))]
        renewed, last, end = 0, lease.deadline, time.monotonic() + 30
        while renewed < r.p["renewals"] and time.monotonic() < end and lease.error is None:
            if lease.deadline != last:
                renewed, last = renewed + 1, lease.deadline
            time.sleep(0.02)
        writes.append(outcome(lambda: lease.write("debit", args)))
        r.observe["writes"] = writes
        r.observe["renewed"] = renewed
        r.observe["lost"] = lease.error is not None


@scenario
def semaphore(r: Run) -> None:
    asyncio.run(semaphore_async(r))


async def semaphore_async(r: Run) -> None:
    """Taken with async with: the asyncio face of the same leases."""
    opts = dict(ttl=r.p["ttl"], permits=int(r.p["permits"]))
    work = {"pool": r.p["pool"]}
    async with r.gw.lock(r.p["resource"], **opts) as a:
        async with r.gw.lock(r.p["resource"], **opts) as b:
            r.observe["permits"] = sorted([a.permit, b.permit])
            try:
                async with r.gw.lock(r.p["resource"], **opts):
                    r.observe["third"] = "ok"
            except fencegw.FencegwError as e:
                r.observe["third"] = name(e)
            writes = []
            for lease in (a, b):
                try:
                    await lease.write("work", work)
                    writes.append("ok")
                except fencegw.FencegwError as e:
                    writes.append(name(e))
            r.observe["writes"] = writes
            freed = a.permit
            await a.release()
            try:
                async with r.gw.lock(r.p["resource"], **opts) as c:
                    r.observe["after_release"] = "ok"
                    r.observe["reused_permit"] = c.permit == freed
            except fencegw.FencegwError as e:
                r.observe["after_release"] = name(e)


@scenario
def multi_lock(r: Run) -> None:
    resources = r.p["resources"]
    try:
        with r.gw.lock([r.p["held"], resources[0]], ttl=r.p["ttl"]):
            r.observe["refused"] = "ok"
    except fencegw.FencegwError as e:
        r.observe["refused"] = name(e)
    r.ready("refused")
    with r.gw.lock(resources, ttl=r.p["ttl"]) as leases:
        roles = {"from": "account/" + r.p["from"], "to": "account/" + r.p["to"]}
        args = {"from": r.p["from"], "to": r.p["to"], "amount_cents": r.p["amount_cents"]}
        r.observe["transfer"] = outcome(lambda: leases.write("transfer", args, roles=roles))


# Writes.


def write_once(r: Run, replayed: bool) -> None:
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        r.ready("holding")
        try:
            res = lease.write("debit", r.debit(r.p["amount_cents"]))
        except fencegw.FencegwError as e:
            r.observe["write"] = name(e)
            return
        r.observe["write"] = "ok"
        if replayed:
            r.observe["replayed"] = res.replayed
        rows = res.statements[0].rows if res.statements else None
        if rows:
            r.observe["balance"] = rows[0].get("balance_cents")


@scenario
def commit_cut(r: Run) -> None:
    write_once(r, True)


@scenario
def unavailable_retried(r: Run) -> None:
    write_once(r, False)


@scenario
def batch(r: Run) -> None:
    a_acct, b_acct = r.p["a"], r.p["b"]
    with r.gw.lock("account/" + a_acct, ttl=r.p["ttl"]) as a, r.gw.lock("account/" + b_acct, ttl=r.p["ttl"]) as b:
        def move(op: str, lease: fencegw.Lease, account: str, cents: int) -> fencegw.BatchWrite:
            return fencegw.BatchWrite(op, {"account": account, "amount_cents": cents}, lease.token)

        try:
            res = r.gw.batch([move("debit", a, a_acct, 5), move("credit", b, b_acct, 5)])
            r.observe["batch"], r.observe["results"] = "ok", len(res.writes)
        except fencegw.FencegwError as e:
            r.observe["batch"] = name(e)
        try:
            r.gw.batch([move("debit", a, a_acct, 1), move("debit", b, b_acct, 99999999)])
            r.observe["refused"] = "ok"
        except fencegw.ProblemError as e:
            r.observe["refused"], r.observe["index"] = name(e), e.index


@scenario
def read_check_deadline(r: Run) -> None:
    args = {"account": r.p["account"]}
    now = datetime.datetime.now(datetime.timezone.utc)
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        rows = lease.read("balance", args).statements[0].rows or []
        r.observe["read_rows"] = len(rows)
        if rows:
            r.observe["read_balance"] = rows[0].get("balance_cents")
        r.observe["check"] = outcome(lease.check)
        r.observe["past_deadline"] = outcome(lambda: lease.write("debit", r.debit(1), not_after=now - datetime.timedelta(minutes=1)))
        r.observe["future_deadline"] = outcome(lambda: lease.write("debit", r.debit(1), not_after=now + datetime.timedelta(hours=1)))
        kept = lease.token
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        lease.write("debit", r.debit(1))
        r.observe["stale_check"] = outcome(lambda: r.gw.check(kept, r.p["resource"]))
        r.observe["stale_read"] = outcome(lambda: r.gw.read("balance", args, token=kept))


@scenario
def problem_types_real(r: Run) -> None:
    cases: Dict[str, str] = {}
    r.observe["cases"] = cases
    sent = [0]

    def write(f: Callable[[], Any]) -> str:
        sent[0] += 1
        return outcome(f)

    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as first:
        pass
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        write(lambda: lease.write("debit", r.debit(1)))
        sent[0] += 1
        try:
            r.gw.write("debit", r.debit(1), token=first.token)
            cases["stale-token"] = "ok"
        except fencegw.StaleToken as e:
            cases["stale-token"] = name(e)
            r.observe["stale_current"] = e.current_token == unsigned(lease.token)
        except fencegw.FencegwError as e:
            cases["stale-token"] = name(e)
        cases["token-required"] = write(lambda: r.gw.write("debit", r.debit(1), token=""))
        cases["bad-request"] = write(lambda: lease.write("debit", r.debit(0)))
        cases["token-rejected"] = write(lambda: r.gw.write("debit", r.debit(1), token=r.p["forged_token"]))
        cases["unknown-operation"] = write(lambda: lease.write("withdraw", r.debit(1)))
        cases["precondition-failed"] = write(lambda: lease.write("debit", r.debit(99999999)))
        cases["constraint"] = write(lambda: lease.write("open_account", {"account": r.p["account"]}))
        key = fencegw.new_idempotency_key()
        write(lambda: lease.write("debit", r.debit(1), idempotency_key=key))
        cases["idempotency-mismatch"] = write(lambda: lease.write("debit", r.debit(2), idempotency_key=key))
        past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)
        cases["deadline-passed"] = write(lambda: lease.write("debit", r.debit(1), not_after=past))
        large = dict(r.debit(1), pad="x" * int(r.p["large_bytes"]))
        cases["too-large"] = write(lambda: lease.write("debit", large))
        cases["locked"] = outcome(lambda: r.gw.acquire(r.p["resource"], ttl=r.p["ttl"]))
    cases["no-lock"] = outcome(lambda: r.gw.revoke(resource=r.p["absent"], reason="conformance"))
    r.observe["writes_sent"] = sent[0]


@scenario
def problem_types_injected(r: Run) -> None:
    got: Dict[str, str] = {}
    r.observe["got"] = got
    for c in r.sc["cases"]:
        r.ready("inject", {"case": c["case"]})
        got[c["case"]] = outcome(lambda: r.gw.check(r.p["token"], r.p["resource"]))


# What happens to the gateway around the client.


@scenario
def key_rotation(r: Run) -> None:
    args = r.debit(r.p["amount_cents"])
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        lease.write("debit", args)
        granted = lease.token
        r.ready("holding")
        end = time.monotonic() + 30
        while lease.token == granted and time.monotonic() < end:
            time.sleep(0.02)
        r.observe["resigned"] = lease.token != granted
        r.observe["same_place"] = unsigned(lease.token) == unsigned(granted)
        r.ready("resigned")
        r.observe["write_after_retire"] = outcome(lambda: lease.write("debit", args))
        r.observe["granted_token"] = outcome(lambda: r.gw.write("debit", args, token=granted))


@scenario
def watch_resume(r: Run) -> None:
    with r.gw.watch(r.p["resource"]) as w:
        timer = threading.Timer(30, w.close)  # bounds the waits below
        timer.start()
        try:
            for ev in w:
                if ev.type == "synced":
                    break
            r.ready("synced")
            types: List[str] = []
            r.observe["events"] = types
            changes = 0
            timer.cancel()
            timer = threading.Timer(30, w.close)
            timer.start()
            for ev in w:
                types.append(ev.type)
                if ev.type == "relist":
                    break
                if ev.type not in ("state", "synced"):
                    changes += 1
                    if changes >= r.p["changes"]:
                        break
        finally:
            timer.cancel()


@scenario
def tls_bearer_file(r: Run) -> None:
    with r.gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
        r.observe["cert_write"] = outcome(lambda: lease.write("debit", r.debit(1)))
        r.observe["forbidden"] = outcome(lambda: lease.write("open_account", {"account": r.p["account"]}))
    gw = gateway(r.spec, bearer_file=r.vars["bearer_file"])
    r.observe["expired_bearer"] = outcome(lambda: gw.acquire(r.p["resource"], ttl=r.p["ttl"]).release())
    r.ready("refused")
    try:
        with gw.lock(r.p["resource"], ttl=r.p["ttl"]) as lease:
            r.observe["after_rewrite"] = "ok"
            r.observe["bearer_write"] = outcome(lambda: lease.write("debit", r.debit(1)))
    except fencegw.FencegwError as e:
        r.observe["after_rewrite"] = name(e)


def main() -> None:
    if len(sys.argv) != 2:
        sys.stderr.write("usage: runner.py SCENARIOS.json\n")
        sys.exit(2)
    with open(sys.argv[1], encoding="utf-8") as f:
        file = json.load(f)
    only = [s for s in os.environ.get("FENCEGW_CONFORMANCE_ONLY", "").split(",") if s]
    for sc in file["scenarios"]:
        if only and sc["id"] not in only:
            continue
        emit({"event": "start", "scenario": sc["id"]})
        line = sys.stdin.readline()
        if not line:
            return
        error = ""
        run: Optional[Run] = None
        try:
            run = Run(sc, json.loads(line))
            f = SCENARIOS.get(sc["id"])
            if f is None:
                error = "runner.py does not know scenario " + sc["id"]
            else:
                f(run)
        except Exception as e:
            traceback.print_exc()
            error = "%s: %s" % (type(e).__name__, e)
        finally:
            if run is not None:
                run.gw.close()
        emit({"event": "result", "scenario": sc["id"], "observed": run.observe if run else {}, "error": error})


if __name__ == "__main__":
    main()

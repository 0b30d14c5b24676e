"""The seed chapter's refund worker (§9.10.3) with the Python client:
"refund intent 8842 is processed once", though the lock's TTL is shorter
than a slow payment provider's answer and a second worker may take over
while the first still waits. Three things in order make it safe: claim
the intent before calling the provider; call the provider with the
intent's id as its idempotency key, and on a timeout ask it what it did
rather than send again; record the result through the gateway, fenced,
pending -> done only. A worker whose lease expired meanwhile cannot
record: its token is stale. The same worker as examples/refund (Go).

    go run ./cmd/fencegw dev --demo examples/refund
    go run ./examples/refund --psp-listen 127.0.0.1:9090 --psp-slow 45s
    PYTHONPATH=clients/python python3 examples/refund/python/refund.py --ttl 3   # A: Ctrl-Z while it waits for the provider
    PYTHONPATH=clients/python python3 examples/refund/python/refund.py           # B: takes over, records
    fg                                                                            # A: its record is refused, stale-token

It prints what it did (--json: one JSON document) and exits 1 if it did
not get the intent refunded or find it done.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Optional, Tuple

import fencegw

# How often a refund request left unanswered is sent again, once the
# provider said it has none under the key.
MAX_SENDS = 3


def log(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


class Provider:
    """The payment provider: POST /refunds makes a refund once per
    idempotency key; GET /refunds/{key} says what it made under it."""

    def __init__(self, base: str, timeout: float) -> None:
        self.base, self.timeout = base.rstrip("/"), timeout

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            if e.code == 404 and method == "GET":
                return None  # no refund under the key
            if e.code < 500:
                raise RuntimeError("provider refused %s %s: %d" % (method, path, e.code)) from None
            raise OSError("provider: %s %s: %d" % (method, path, e.code)) from None

    def refund(self, key: str, amount_cents: int) -> Tuple[Dict[str, Any], bool]:
        """The refund made under key, and whether it came from asking the
        provider after a request it left unanswered."""
        queried = False
        for _ in range(MAX_SENDS):
            try:
                return self._call("POST", "/refunds", {"idempotency_key": key, "reference": key, "amount_cents": amount_cents}) or {}, queried
            except OSError as e:  # unanswered: it may have been made all the same
                log("provider: no answer (%s); asking what it did under %s" % (e, key))
            queried = True
            made = self._call("GET", "/refunds/" + urllib.parse.quote(key, safe=""))
            if made is not None:
                return made, queried
        raise RuntimeError("refund %s: %d requests unanswered, and the provider has none" % (key, MAX_SENDS))


def refund_once(rep: Dict[str, Any], gw: fencegw.Gateway, psp: Provider, intent: str, amount: int, ttl: float, wait: float) -> None:
    """Processes the refund of intent in the order that makes it happen
    once whoever runs it and however late. Any step may be a run's last;
    the next run resumes from the intent's state. rep gets what the run
    did, as far as it went."""
    resource = "refund/" + intent
    with gw.lock(resource, ttl=ttl, wait=wait) as lease:
        # Reports and logs get the unsigned token: the signed one is a
        # capability.
        token = lease.token
        rep["token"] = fencegw.unsigned(token)
        log("%s: lock taken, token %s" % (resource, rep["token"]))

        # 1. Claim before the provider hears of the refund.
        res = lease.write("claim_refund", {"intent": intent, "amount_cents": amount})
        rows = res.statements[1].rows if len(res.statements) == 2 else None
        if not rows:
            raise RuntimeError("claim_refund: no row for the intent (is the gateway serving examples/refund/policy.yaml?)")
        row = rows[0]
        if row.get("amount_cents") != amount:
            raise RuntimeError("claim %s: the intent is for %s cents, not %d" % (resource, row.get("amount_cents"), amount))
        if row.get("status") == "done":
            log("%s: already done, provider reference %s" % (resource, row.get("psp_ref")))
            rep.update(outcome="already-done", psp_ref=row.get("psp_ref"))
            return

        # 2. The intent's id is the provider's idempotency key: a worker
        # that took over asks for the same refund, not a second one.
        log("%s: claimed (%s); asking the provider to refund %d cents" % (resource, row.get("status"), amount))
        made, queried = psp.refund(intent, amount)
        rep.update(psp_ref=made.get("id"), queried_psp=queried)
        log("%s: provider refund %s (queried after an unanswered request: %s); recording it" % (resource, made.get("id"), str(queried).lower()))

        # 3. Record with the token of step 1, through gw.write rather than
        # lease.write on purpose: lease.write refuses to send once the
        # lease is past its local deadline, but a process paused between
        # that check and the send (GC, SIGSTOP, a slow provider answer
        # delivered late) sends anyway what it prepared. That send is what
        # this example shows refused: by the fence in PostgreSQL, the one
        # check a pause cannot slip past.
        gw.write("record_refund", {"intent": intent, "psp_ref": made.get("id")}, token=token)
        log("%s: recorded" % resource)
        rep["outcome"] = "refunded"


def main() -> int:
    ap = argparse.ArgumentParser(description="The refund worker of examples/refund, in Python.")
    ap.add_argument("--gateway", default=os.environ.get("FENCEGW_URL", "http://127.0.0.1:8080"), help="gateway base URL (FENCEGW_URL)")
    ap.add_argument("--intent", default="8842")
    ap.add_argument("--amount", type=int, default=2500, help="the refund, in cents")
    ap.add_argument("--ttl", type=float, default=30, help="lease TTL, seconds")
    ap.add_argument("--wait", type=float, default=60, help="how long to wait for the lock, seconds")
    ap.add_argument("--psp", default="http://127.0.0.1:9090", help="the payment provider's base URL")
    ap.add_argument("--psp-timeout", type=float, default=60, help="seconds to wait for one provider answer before asking it what it did")
    ap.add_argument("--json", action="store_true", help="print the report as one JSON document")
    a = ap.parse_args()
    bearer = os.environ.get("FENCEGW_BEARER_TOKEN") or None
    rep: Dict[str, Any] = {"intent": a.intent}
    err: Optional[BaseException] = None
    with fencegw.Gateway(a.gateway, bearer=bearer) as gw:
        try:
            refund_once(rep, gw, Provider(a.psp, a.psp_timeout), a.intent, a.amount, a.ttl, a.wait)
        except fencegw.ProblemError as e:
            err = e
            rep.update(outcome=e.kind or "error", error=str(e))
            if e.current_token:
                rep["current_token"] = e.current_token
        except (fencegw.FencegwError, OSError, RuntimeError) as e:
            err = e
            rep.update(outcome="error", error=str(e))
    if a.json:
        print(json.dumps(rep))
    else:
        print("refund %s: %s, token %s, provider refund %r" % (rep["intent"], rep.get("outcome"), rep.get("token", ""), rep.get("psp_ref", "")))
        if err is not None:
            print("  %s" % err)
    return 1 if err is not None else 0


if __name__ == "__main__":
    sys.exit(main())

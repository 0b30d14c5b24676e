"""The Python client's benchmark driver, run by `fencegw bench
--client-libraries` (internal/harness/bench/clientlibs.go says the
protocol): writers threads, each holding a lease on an account of the
bench policy, write `add` in a closed loop through the client (--path
client) or through http.client, the language's bare HTTP call of the same
request (--path bare: the same headers, a new Idempotency-Key per write, a
kept-alive connection per thread). Prints one JSON object: writes, errors,
seconds and each measured write's latency in microseconds."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse
from typing import Callable, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import fencegw  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gateway", required=True)
    ap.add_argument("--path", choices=["client", "bare"], required=True)
    ap.add_argument("--writers", type=int, required=True)
    ap.add_argument("--first-account", type=int, required=True)
    ap.add_argument("--warmup-ms", type=int, required=True)
    ap.add_argument("--duration-ms", type=int, required=True)
    a = ap.parse_args()

    gw = fencegw.Gateway(a.gateway, timeout=30)
    leases = [gw.acquire("acct/%d" % (a.first_account + w), ttl=120, wait=10) for w in range(a.writers)]
    u = urllib.parse.urlsplit(a.gateway)
    start = threading.Barrier(a.writers + 1)
    lat: List[List[int]] = [[] for _ in range(a.writers)]
    errors = [0] * a.writers
    bounds = [0.0, 0.0]  # measuring from, until (time.monotonic())

    def writer(w: int) -> None:
        lease = leases[w]
        args = {"id": a.first_account + w, "amount": 1}
        send: Callable[[], None]
        if a.path == "client":
            def send() -> None:
                lease.write("add", args)
        else:
            conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=30)
            body = json.dumps(args).encode()

            def send() -> None:
                conn.request("POST", "/v1/ops/add", body=body, headers={
                    "Content-Type": "application/json", "Accept": "application/json, application/problem+json",
                    "Fencing-Token": lease.token, "Idempotency-Key": '"%s"' % fencegw.new_idempotency_key()})
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    raise RuntimeError("status %d" % resp.status)
        start.wait()
        while True:
            t0 = time.monotonic()
            if t0 >= bounds[1]:
                break
            try:
                send()
            except Exception:
                errors[w] += 1
                continue
            if t0 >= bounds[0]:
                lat[w].append(int((time.monotonic() - t0) * 1e6))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(a.writers)]
    for t in threads:
        t.start()
    now = time.monotonic()
    bounds[0], bounds[1] = now + a.warmup_ms / 1000, now + (a.warmup_ms + a.duration_ms) / 1000
    start.wait()
    for t in threads:
        t.join()
    for lease in leases:
        lease.release()
    gw.close()
    all_lat = [x for part in lat for x in part]
    print(json.dumps({"writes": len(all_lat), "errors": sum(errors), "seconds": a.duration_ms / 1000, "latencies_us": all_lat}))


if __name__ == "__main__":
    main()

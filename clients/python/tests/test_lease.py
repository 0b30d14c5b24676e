"""The lease's life against answers a test scripts: renewed, lost, expired,
released, used after its block; and the threads it leaves (none)."""

from __future__ import annotations

import asyncio
import threading
import time
import unittest
from typing import List

import fencegw
from tests.fakegw import FakeGateway, Reply, Request, grant, keepalive_threads, kind_of, lease_routes, problem, renewed

GONE = problem("lease-not-found", 404, detail="keep lease alive: tokens: lease not found")
PAGE_503 = Reply(503, "<html>503</html>", content_type="text/html")


class LeaseTest(unittest.TestCase):
    def serve(self, route) -> FakeGateway:
        fake = FakeGateway(route)
        self.addCleanup(fake.stop)
        return fake

    def client(self, fake: FakeGateway, **kw) -> fencegw.Gateway:
        gw = fencegw.Gateway(fake.url, timeout=5, **kw)
        self.addCleanup(gw.close)
        return gw

    def tearDown(self) -> None:
        for t in keepalive_threads():
            t.join(10)
        self.assertEqual(keepalive_threads(), [], "a keepalive thread outlived its lease")

    def test_used_after_its_block(self) -> None:
        fake = self.serve(lease_routes(renewed()))
        gw = self.client(fake)
        with gw.lock("account/acct-1") as lease:
            lease.write("debit", {"account": "acct-1", "amount_cents": 1})
        self.assertFalse(lease.lost.is_set(), "a release is no loss")
        for call in (lambda: lease.write("debit", {}), lease.check, lambda: lease.read("balance", {}), lambda: lease.set_value("v")):
            with self.assertRaises(fencegw.LeaseReleased):
                call()
        self.assertEqual(fake.count("POST", "/v1/ops/"), 1)
        self.assertEqual(fake.count("DELETE", "/v1/leases/"), 1)
        lease.release()  # again: nothing sent
        self.assertEqual(fake.count("DELETE", "/v1/leases/"), 1)

    def test_keepalive_refused(self) -> None:
        fake = self.serve(lease_routes(lambda req: GONE, ttl=1))
        gw = self.client(fake)
        with gw.lock("account/acct-1", ttl=1) as lease:
            self.assertTrue(lease.lost.wait(10), "lost not set after the keepalive was refused")
            with self.assertRaises(fencegw.LeaseLost) as cm:
                lease.write("debit", {})
            self.assertNotIsInstance(cm.exception, fencegw.LeaseExpired)
            self.assertIsInstance(cm.exception.__cause__, fencegw.LeaseNotFound)
        self.assertEqual(fake.count("POST", "/v1/leases/"), 1, "keepalives after the lease was gone")
        self.assertEqual(fake.count("POST", "/v1/ops/"), 0)
        self.assertEqual(fake.count("DELETE", "/v1/leases/"), 0, "released a lease the gateway said was gone")
        acquisitions = sum(1 for r in fake.requests if kind_of(r) == "acquire")
        self.assertEqual(acquisitions, 1, "the lock was taken again")

    def test_a_loss_the_block_never_heard_of_is_raised_on_leaving_it(self) -> None:
        fake = self.serve(lease_routes(lambda req: GONE, ttl=1))
        gw = self.client(fake)
        with self.assertRaises(fencegw.LeaseLost):
            with gw.lock("account/acct-1", ttl=1) as lease:
                lease.lost.wait(10)
        # The block's own exception is never masked by it.
        with self.assertRaises(KeyError):
            with gw.lock("account/acct-1", ttl=1) as lease:
                lease.lost.wait(10)
                raise KeyError("the block's")

    def test_expires_while_the_gateway_does_not_answer(self) -> None:
        failures: List[fencegw.RenewFailure] = []
        fake = self.serve(lease_routes(lambda req: PAGE_503, ttl=1))
        gw = self.client(fake, on_renew_failure=failures.append)
        with gw.lock("account/acct-1", ttl=1) as lease:
            self.assertTrue(lease.lost.wait(10))
            self.assertIsInstance(lease.error, fencegw.LeaseExpired)
            with self.assertRaises(fencegw.LeaseExpired):
                lease.write("debit", {})
        self.assertEqual(fake.count("POST", "/v1/ops/"), 0)
        self.assertGreaterEqual(len(failures), 2, "keepalives were not retried")
        self.assertTrue(all(isinstance(f.error, fencegw.Unavailable) for f in failures))
        self.assertEqual(fake.count("DELETE", "/v1/leases/"), 1, "the gateway may still hold it: released")

    def test_release_is_bounded(self) -> None:
        hold = threading.Event()
        self.addCleanup(hold.set)
        fake = self.serve(lease_routes(renewed(), release=lambda req: Reply(204, b"", hold=hold)))
        gw = self.client(fake)
        lease = gw.acquire("account/acct-1")
        lease.release(timeout=0.3)
        self.assertFalse(hold.is_set(), "release waited for the gateway's answer")
        self.assertIsInstance(lease.error, fencegw.LeaseReleased)

    def test_lost_unnoticed(self) -> None:
        fake = self.serve(lease_routes(renewed(), release=lambda req: GONE))
        gw = self.client(fake)
        with self.assertRaises(fencegw.LeaseLost):
            with gw.lock("account/acct-1"):
                pass

    def test_token_signed_again(self) -> None:
        tokens = iter(["1:7:QkJDREVGR0hJSktMTU5PUA", "1:8:Q0JDREVGR0hJSktMTU5PUA"])
        seen = threading.Event()

        def keepalive(req: Request) -> Reply:
            tok = next(tokens, None)
            if tok is None:
                seen.set()
                tok = "1:8:Q0JDREVGR0hJSktMTU5PUA"
            return Reply(200, {"lease_id": "1a2b", "ttl": 1, "token": tok})

        fake = self.serve(lease_routes(keepalive, ttl=1))
        gw = self.client(fake)
        with gw.lock("account/acct-1", ttl=1) as lease:
            self.assertTrue(seen.wait(10))
            # 1:7 signed again is adopted; 1:8 is another place: not this lease's.
            self.assertEqual(lease.token, "1:7:QkJDREVGR0hJSktMTU5PUA")

    def test_a_grant_after_a_long_wait_is_renewed_first(self) -> None:
        # The grant comes 1.5 s after the request of a 1 s lease: counted
        # from the request, it would be expired at once. The gateway kept
        # it alive while it waited: a keepalive first says how long it has.
        def late_grant(req: Request) -> Reply:
            time.sleep(1.5)  # the wait in line, as the gateway answers it
            return grant(ttl=1)
        fake = self.serve(lease_routes(renewed(ttl=1, token="1:7:UkVTSUdORUQtLS0tLS0tLQ"), ttl=1, acquire=late_grant))
        gw = self.client(fake)
        with gw.lock("account/acct-1", ttl=1, wait=5) as lease:
            self.assertFalse(lease.lost.is_set())
            self.assertEqual(lease.token, "1:7:UkVTSUdORUQtLS0tLS0tLQ", "the renewal's token is not taken")
            lease.write("debit", {"account": "acct-1", "amount_cents": 1})
        self.assertGreaterEqual(fake.count("POST", "/v1/leases/"), 1, "no keepalive before the deadline was counted")

    def test_a_lease_gone_when_renewed_after_the_wait(self) -> None:
        def late_grant(req: Request) -> Reply:
            time.sleep(1.5)
            return grant(ttl=1)
        fake = self.serve(lease_routes(lambda req: GONE, ttl=1, acquire=late_grant))
        gw = self.client(fake)
        with self.assertRaises(fencegw.LeaseLost):
            with gw.lock("account/acct-1", ttl=1, wait=5):
                self.fail("the block ran on a lease gone")
        self.assertEqual(fake.count("POST", "/v1/ops/"), 0)

    def test_a_grant_without_its_fields(self) -> None:
        fake = self.serve(lease_routes(renewed(), acquire=lambda req: Reply(201, {"lease_id": "1a2b", "ttl": 10})))
        with self.assertRaises(fencegw.UnexpectedResponse):
            self.client(fake).acquire("account/acct-1")
        self.assertEqual(fake.count("DELETE", "/v1/leases/1a2b"), 1, "the lease granted was left to expire")

    def test_a_lost_grant_is_asked_for_again_under_its_key(self) -> None:
        answers = iter([Reply(close=True), grant()])
        fake = self.serve(lease_routes(renewed(), acquire=lambda req: next(answers)))
        lease = self.client(fake).acquire("account/acct-1")
        lease.release()
        keys = [r.headers.get("idempotency-key") for r in fake.requests if kind_of(r) == "acquire"]
        self.assertEqual(len(keys), 2)
        self.assertEqual(keys[0], keys[1])

    def test_several_resources_all_or_none(self) -> None:
        def acquire(req: Request) -> Reply:
            resource = req.json()["resource"]
            if resource == "account/acct-2":
                return problem("locked", 409, resource=resource, current_token="1:3")
            return grant(lease_id="a1", resource=resource)

        fake = self.serve(lease_routes(renewed(), acquire=acquire))
        gw = self.client(fake)
        with self.assertRaises(fencegw.Locked) as cm:
            with gw.lock(["account/acct-2", "account/acct-1"]):
                self.fail("entered a block without every lease")
        self.assertEqual(cm.exception.holder, "1:3")
        asked = [r.json()["resource"] for r in fake.requests if kind_of(r) == "acquire"]
        self.assertEqual(asked, ["account/acct-1", "account/acct-2"], "not in canonical order")
        self.assertEqual(fake.count("DELETE", "/v1/leases/a1"), 1, "the lease taken was kept")

    def test_async_with(self) -> None:
        fake = self.serve(lease_routes(lambda req: GONE, ttl=1))
        gw = self.client(fake)

        async def main() -> None:
            async with gw.lock("account/acct-1", ttl=1) as lease:
                self.assertIsInstance(lease, fencegw.AsyncLease)
                await asyncio.wait_for(lease.lost.wait(), 10)
                with self.assertRaises(fencegw.LeaseLost):
                    await lease.write("debit", {})

        asyncio.run(main())

    def test_async_with_cancelled_while_acquiring(self) -> None:
        """A task cancelled while it waits for the grant: the lease granted
        after is released, not left to hold the lock for nobody."""
        hold = threading.Event()
        fake = self.serve(lease_routes(renewed(), acquire=lambda req: Reply(201, grant().body, hold=hold)))
        gw = self.client(fake)

        async def main() -> None:
            task = asyncio.ensure_future(gw.lock("account/acct-1").__aenter__())
            while not fake.requests:
                await asyncio.sleep(0.01)
            task.cancel()
            with self.assertRaises(asyncio.CancelledError):
                await task
            hold.set()
            while fake.count("DELETE", "/v1/leases/") == 0:
                await asyncio.sleep(0.01)

        asyncio.run(asyncio.wait_for(main(), 20))


if __name__ == "__main__":
    unittest.main()

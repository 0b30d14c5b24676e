"""Options the gateway would refuse are refused before anything is sent;
credentials that cannot be read are typed errors, nothing sent."""

from __future__ import annotations

import datetime
import os
import tempfile
import unittest

import fencegw
from tests.fakegw import FakeGateway, Reply, lease_routes, renewed


class LeaseOptionsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.fake = FakeGateway(lease_routes(renewed()))
        self.addCleanup(self.fake.stop)
        self.gw = fencegw.Gateway(self.fake.url)
        self.addCleanup(self.gw.close)

    def test_out_of_range(self) -> None:
        cases = [
            {"ttl": 0}, {"ttl": -1}, {"ttl": 3601}, {"ttl": float("nan")}, {"ttl": "10"}, {"ttl": True},
            {"wait": -1}, {"wait": 301}, {"wait": float("inf")},
            {"permits": 0}, {"permits": 1001}, {"permits": 1.5},
            {"safety_margin": -0.1}, {"ttl": 2, "safety_margin": 2}, {"value": "x" * 4097},
        ]
        for opts in cases:
            with self.subTest(opts=opts):
                with self.assertRaises(fencegw.ConfigurationError):
                    self.gw.lock("account/acct-1", **opts)  # type: ignore[arg-type]
                with self.assertRaises(fencegw.ConfigurationError):
                    self.gw.acquire("account/acct-1", **opts)  # type: ignore[arg-type]
        self.assertEqual(self.fake.requests, [], "options refused, yet requests were sent")

    def test_in_range(self) -> None:
        lease = self.gw.acquire("account/acct-1", ttl=0.5, wait=300, permits=None, safety_margin=0.5)
        lease.release()
        self.assertEqual(self.fake.requests[0].json(), {"resource": "account/acct-1", "ttl": 1, "wait": 300})

    def test_write_options(self) -> None:
        naive = datetime.datetime(2030, 1, 1)
        with self.assertRaises(fencegw.ConfigurationError):
            self.gw.write("debit", {}, token="1:1", not_after=naive)
        for key in ("", 'a"b', "a\\b", "é", "x" * 256):
            with self.subTest(key=key), self.assertRaises(fencegw.ConfigurationError):
                self.gw.write("debit", {}, token="1:1", idempotency_key=key)
        with self.assertRaises(fencegw.ConfigurationError):
            self.gw.write("debit", {"x": float("nan")}, token="1:1")
        self.assertEqual(self.fake.count("POST", "/v1/ops/"), 0)

    def test_not_after_is_sent_in_utc(self) -> None:
        fake = FakeGateway(lambda req: Reply(200, {"statements": []}))
        self.addCleanup(fake.stop)
        gw = fencegw.Gateway(fake.url)
        self.addCleanup(gw.close)
        when = datetime.datetime(2030, 1, 1, 12, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
        gw.write("debit", {}, token="1:1", not_after=when)
        self.assertEqual(fake.requests[0].headers["fencing-not-after"], "2030-01-01T10:00:00.000000Z")


class URLsTest(unittest.TestCase):
    def test_no_replica(self) -> None:
        for urls in ([], ()):
            with self.subTest(urls=urls), self.assertRaises(fencegw.ConfigurationError):
                fencegw.Gateway(urls)

    def test_malformed(self) -> None:
        for url in ("localhost:8080", "ftp://gw", "http://", "http://gw:99999", "http://gw/?q=1", "https://user:secret@:80"):
            with self.subTest(url=url):
                with self.assertRaises(fencegw.ConfigurationError) as cm:
                    fencegw.Gateway(["http://127.0.0.1:1", url])
                self.assertNotIn("secret", str(cm.exception))
                self.assertIn("#2", str(cm.exception))


class BearerFileTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = os.path.join(self.dir.name, "token")
        self.fake = FakeGateway(lease_routes(renewed(ttl=3), ttl=3))
        self.addCleanup(self.fake.stop)

    def write(self, text: str) -> None:
        tmp = self.path + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.path)

    def test_missing_or_empty_at_start(self) -> None:
        with self.assertRaises(fencegw.ConfigurationError) as cm:
            fencegw.Gateway(self.fake.url, bearer_file=self.path)
        self.assertIn("bearer file", str(cm.exception))
        self.write(" \n")
        with self.assertRaises(fencegw.ConfigurationError) as cm:
            fencegw.Gateway(self.fake.url, bearer_file=self.path)
        self.assertIn("empty", str(cm.exception))

    def test_read_again_when_it_changes(self) -> None:
        self.write("first\n")
        gw = fencegw.Gateway(self.fake.url, bearer_file=self.path)
        self.addCleanup(gw.close)
        gw.write("debit", {}, token="1:1")
        self.write("second-longer")
        gw.write("debit", {}, token="1:1")
        got = [r.headers.get("authorization") for r in self.fake.requests]
        self.assertEqual(got, ["Bearer first", "Bearer second-longer"])

    def test_a_file_that_disappears(self) -> None:
        self.write("first")
        gw = fencegw.Gateway(self.fake.url, bearer_file=self.path)
        self.addCleanup(gw.close)
        os.remove(self.path)
        with self.assertRaises(fencegw.CredentialError) as cm:
            gw.write("debit", {}, token="1:1")
        self.assertIn(self.path, str(cm.exception))
        self.assertNotIn("first", str(cm.exception))
        self.assertEqual(self.fake.requests, [], "a request was sent without its credential")
        self.write("back")
        gw.write("debit", {}, token="1:1")
        self.assertEqual(self.fake.requests[-1].headers.get("authorization"), "Bearer back")

    def test_a_file_that_disappears_under_a_lease(self) -> None:
        """The keepalive meets the missing file as a failure it retries:
        the lease lives on when the file comes back."""
        self.write("first")
        failures = []
        gw = fencegw.Gateway(self.fake.url, bearer_file=self.path, on_renew_failure=failures.append)
        self.addCleanup(gw.close)
        lease = gw.acquire("account/acct-1", ttl=3)
        self.addCleanup(lease.release)
        os.remove(self.path)
        deadline = lease.deadline
        while not failures and lease.error is None:
            lease.lost.wait(0.02)
        self.assertTrue(failures, "no renew failure reported")
        self.assertIsInstance(failures[0].error, fencegw.CredentialError)
        self.write("back")
        while lease.deadline == deadline and lease.error is None:
            lease.lost.wait(0.02)
        self.assertIsNone(lease.error)


if __name__ == "__main__":
    unittest.main()

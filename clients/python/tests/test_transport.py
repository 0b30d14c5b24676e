"""Connections kept and reused, replicas failed over, and the retry rules:
sent again under its key only while the answer is lost, never after a
final answer, never told "not applied" of a write that may have been."""

from __future__ import annotations

import threading
import unittest
from typing import List

import fencegw
from tests.fakegw import FakeGateway, Reply, Request, dead_url, problem, written

UNAVAILABLE_NOT_APPLIED = problem("unavailable", 503, outcome="not-applied")
UNAVAILABLE_UNKNOWN = problem("unavailable", 503, outcome="unknown")
PAGE_502 = Reply(502, "<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html")


def scripted(*replies: Reply) -> "Script":
    return Script(list(replies))


class Script:
    """Answers requests with replies in turn, then with the last one."""

    def __init__(self, replies: List[Reply]) -> None:
        self.replies = replies
        self.mu = threading.Lock()

    def __call__(self, req: Request) -> Reply:
        with self.mu:
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


class TransportTest(unittest.TestCase):
    def serve(self, route) -> FakeGateway:
        fake = FakeGateway(route)
        self.addCleanup(fake.stop)
        return fake

    def client(self, *urls: str) -> fencegw.Gateway:
        gw = fencegw.Gateway(list(urls), timeout=5)
        self.addCleanup(gw.close)
        return gw

    def test_connections_are_reused(self) -> None:
        fake = self.serve(lambda req: written())
        gw = self.client(fake.url)
        for _ in range(20):
            gw.write("debit", {}, token="1:1")
        self.assertEqual(fake.connections, 1)
        # From many threads at once: each takes a connection of its own
        # and gives it back; none is shared by two requests.
        errors: List[BaseException] = []

        def burst() -> None:
            try:
                for _ in range(20):
                    gw.write("debit", {}, token="1:1")
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=burst) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(fake.requests), 20 + 8 * 20)
        self.assertLessEqual(fake.connections, 1 + 8)

    def test_a_connection_the_server_closed_is_replaced(self) -> None:
        fake = self.serve(lambda req: Reply(200, {"statements": []}, headers={"Connection": "close"}))
        gw = self.client(fake.url)
        for _ in range(3):
            gw.write("debit", {}, token="1:1")
        self.assertEqual(len(fake.requests), 3)

    def test_failover(self) -> None:
        fake = self.serve(lambda req: written())
        gw = self.client(dead_url(), fake.url)
        attempts: List[str] = []
        gw._transport.on_attempt = lambda replica, path: attempts.append(replica)
        for _ in range(3):
            gw.write("debit", {}, token="1:1")
        self.assertEqual(len(fake.requests), 3)
        self.assertEqual(len(attempts), 4, "the replica that is down was asked more than once")
        self.assertEqual(len(set(fake.requests[0].headers["idempotency-key"] for _ in [0])), 1)

    def test_all_replicas_down(self) -> None:
        gw = self.client(dead_url(), dead_url())
        with self.assertRaises(fencegw.GatewayUnreachable) as cm:
            gw.write("debit", {}, token="1:1")
        self.assertEqual(cm.exception.outcome, "not-applied")
        self.assertIn("no replica of 2", str(cm.exception))

    def test_retried_under_its_key_while_the_answer_is_lost(self) -> None:
        for name, first in (("503 not-applied", UNAVAILABLE_NOT_APPLIED), ("503 unknown", UNAVAILABLE_UNKNOWN),
                            ("a proxy's 502 page", PAGE_502), ("a connection closed unanswered", Reply(close=True)),
                            ("an answer cut short", Reply(raw=b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"statements\": [")),
                            ("a status line cut short", Reply(raw=b"HTTP/1.1 20"))):
            with self.subTest(name):
                fake = self.serve(scripted(first, written()))
                res = self.client(fake.url).write("debit", {}, token="1:1")
                self.assertEqual(len(fake.requests), 2)
                keys = {r.headers["idempotency-key"] for r in fake.requests}
                self.assertEqual(len(keys), 1, "the retry carried another key")
                self.assertEqual(res.statements[0].rows, [{"id": "acct-1", "balance_cents": 900}])

    def test_final_answers_are_not_sent_again(self) -> None:
        for name, reply, cls in (("stale token", problem("stale-token", 409, current_token="1:9"), fencegw.StaleToken),
                                 ("halted authority", problem("authority-halted", 503, outcome="unknown"), fencegw.AuthorityHalted),
                                 ("an HTML 404", Reply(404, "<html>nope</html>", content_type="text/html"), fencegw.UnexpectedResponse),
                                 ("a 200 that does not decode", Reply(200, "{not json"), fencegw.UnexpectedResponse),
                                 ("a 200 that is no result", Reply(200, {"rows": 1}), fencegw.UnexpectedResponse),
                                 ("a 200 of the wrong shapes", Reply(200, {"statements": [{"rows_affected": "1"}]}), fencegw.UnexpectedResponse)):
            with self.subTest(name):
                fake = self.serve(lambda req, reply=reply: reply)
                with self.assertRaises(cls):
                    self.client(fake.url).write("debit", {}, token="1:1")
                self.assertEqual(len(fake.requests), 1)

    def test_never_not_applied_after_an_attempt_that_may_have_applied(self) -> None:
        fake = self.serve(scripted(PAGE_502, UNAVAILABLE_NOT_APPLIED))
        with self.assertRaises(fencegw.Unavailable) as cm:
            self.client(fake.url).write("debit", {}, token="1:1")
        self.assertEqual(len(fake.requests), 4)
        self.assertEqual(cm.exception.outcome, "unknown")
        fake = self.serve(lambda req: UNAVAILABLE_NOT_APPLIED)
        with self.assertRaises(fencegw.Unavailable) as cm:
            self.client(fake.url).write("debit", {}, token="1:1")
        self.assertEqual(cm.exception.outcome, "not-applied")

    def test_answers_beyond_their_bound(self) -> None:
        fake = self.serve(lambda req: Reply(409, b"{" + b" " * (70 << 10) + b"}", content_type="application/problem+json"))
        with self.assertRaises(fencegw.UnexpectedResponse):
            self.client(fake.url).write("debit", {}, token="1:1")


if __name__ == "__main__":
    unittest.main()

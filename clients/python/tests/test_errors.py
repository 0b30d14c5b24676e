"""Answers that are errors decode to the class of their problem type, and
anything else to a typed error with a clear, bounded message."""

from __future__ import annotations

import json
import random
import unittest

import fencegw
from fencegw.errors import PROBLEM_CLASSES, error_from_answer

PROBLEM = "application/problem+json"


class ProblemTypesTest(unittest.TestCase):
    def test_every_problem_type_has_its_class(self) -> None:
        for kind, cls in PROBLEM_CLASSES.items():
            with self.subTest(kind=kind):
                doc = {"type": "urn:fencegw:problem:" + kind, "title": kind, "status": 409, "detail": "d",
                       "resource": "account/acct-1", "current_token": "1:9", "presented_token": "1:4"}
                err = error_from_answer(409, PROBLEM, json.dumps(doc).encode())
                self.assertIs(type(err), cls)
                assert isinstance(err, fencegw.ProblemError)
                self.assertEqual(err.kind, kind)
                self.assertEqual(err.problem, doc)
                self.assertEqual(err.resource, "account/acct-1")
                self.assertEqual(err.status, 409)

    def test_stale_token_names_the_fence(self) -> None:
        err = error_from_answer(409, PROBLEM + "; charset=utf-8", b'{"type":"urn:fencegw:problem:stale-token","status":409,'
                                b'"detail":"stale token 1:4 for account/acct-1: the fence is at 1:7","current_token":"1:7","presented_token":"1:4","operation":"debit"}')
        assert isinstance(err, fencegw.StaleToken)
        self.assertEqual((err.current_token, err.presented_token, err.operation), ("1:7", "1:4", "debit"))
        self.assertEqual(str(err), "409 stale-token: stale token 1:4 for account/acct-1: the fence is at 1:7")

    def test_unavailable_carries_its_outcome(self) -> None:
        for outcome, want in (("not-applied", "not-applied"), ("unknown", "unknown"), (None, "unknown"), ("??", "unknown")):
            doc = {"type": "urn:fencegw:problem:unavailable", "status": 503}
            if outcome is not None:
                doc["outcome"] = outcome
            err = error_from_answer(503, PROBLEM, json.dumps(doc).encode())
            assert isinstance(err, fencegw.Unavailable)
            self.assertEqual(err.outcome, want)
        halted = error_from_answer(503, PROBLEM, b'{"type":"urn:fencegw:problem:authority-halted","outcome":"unknown"}')
        self.assertIsInstance(halted, fencegw.AuthorityHalted)
        self.assertIsInstance(halted, fencegw.Unavailable)

    def test_answers_that_are_no_problem_of_a_known_type(self) -> None:
        cases = [
            ("a problem without a type", 409, PROBLEM, b'{"title":"Conflict","status":409}', fencegw.ProblemError),
            ("a type of another vocabulary", 400, PROBLEM, b'{"type":"about:blank"}', fencegw.ProblemError),
            ("a kind from a newer gateway, 503", 503, PROBLEM, b'{"type":"urn:fencegw:problem:overloaded"}', fencegw.Unavailable),
            ("a proxy's HTML 502", 502, "text/html", b"<html><h1>502 Bad Gateway</h1></html>", fencegw.Unavailable),
            ("a load balancer's 504, no type", 504, "", b"", fencegw.Unavailable),
            ("an HTML 404", 404, "text/html", b"<html>Not Found</html>", fencegw.UnexpectedResponse),
            ("a problem that is not JSON", 409, PROBLEM, b"{not json", fencegw.UnexpectedResponse),
            ("a problem cut short", 409, PROBLEM, b'{"type":"urn:fencegw:problem:stale-tok', fencegw.UnexpectedResponse),
            ("a JSON array", 409, PROBLEM, b"[1,2]", fencegw.UnexpectedResponse),
            ("JSON of another type", 409, "application/json", b'{"type":"urn:fencegw:problem:stale-token"}', fencegw.UnexpectedResponse),
        ]
        for name, status, ct, body, cls in cases:
            with self.subTest(name):
                err = error_from_answer(status, ct, body)
                self.assertIs(type(err), cls, err)
                self.assertIn(str(status), str(err))

    def test_messages_are_printable_and_bounded(self) -> None:
        err = error_from_answer(500, "text/plain", b"line\nbreak\x00\x1b[31m" + b"x" * 100000)
        msg = str(err)
        self.assertTrue(msg.isprintable(), msg)
        self.assertLess(len(msg), 400)
        self.assertNotIn("\n", msg)


class RandomAnswersTest(unittest.TestCase):
    """A bounded fuzz of error_from_answer: whatever the answer, one typed
    error, never an exception of its own, with a bounded printable
    message; a problem's status is the answer's."""

    def test_random_answers(self) -> None:
        rnd = random.Random(35)
        seeds = [
            b'{"type":"urn:fencegw:problem:stale-token","status":409,"current_token":"1:4"}',
            b'{"type":"urn:fencegw:problem:unavailable","outcome":"not-applied"}',
            b'{"type":1,"status":"x","detail":["a"],"index":true,"outcome":7}',
            b"<html></html>", b"", b"null", b'{"detail":"\\u0000\\n"}',
        ]
        for i in range(3000):
            body = bytearray(rnd.choice(seeds))
            for _ in range(rnd.randrange(4)):
                op = rnd.randrange(3)
                if op == 0 and body:
                    del body[rnd.randrange(len(body)):]
                elif op == 1:
                    body.insert(rnd.randrange(len(body) + 1), rnd.randrange(256))
                elif body:
                    body[rnd.randrange(len(body))] = rnd.randrange(256)
            status = rnd.choice([400, 401, 403, 404, 409, 413, 422, 428, 429, 500, 502, 503, 504, rnd.randrange(100, 600)])
            ct = rnd.choice([PROBLEM, PROBLEM + "; charset=utf-8", "text/html", "", "application/json", "\x00;;"])
            with self.subTest(i=i):
                err = error_from_answer(status, ct, bytes(body))
                self.assertIsInstance(err, fencegw.FencegwError)
                if isinstance(err, fencegw.ProblemError):
                    self.assertEqual(err.status, status)
                    if err.index is not None:
                        self.assertIsInstance(err.index, int)
                msg = str(err)
                self.assertTrue(msg.isprintable(), repr(msg))
                self.assertLess(len(msg), 1024)


if __name__ == "__main__":
    unittest.main()

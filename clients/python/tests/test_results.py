"""Success answers decode to results, or to UnexpectedResponse: never a
half-filled result, never an exception of the decoder's own."""

from __future__ import annotations

import json
import random
import unittest

import fencegw
from fencegw._wire import decode_object
from fencegw.results import lock_state, read_result, watch_event, write_result

WRITE = {"operation": "debit", "resource": "account/acct-1", "token": "1:7",
         "statements": [{"rows_affected": 1, "rows": [{"id": "acct-1", "balance_cents": 700}]}, {"rows_affected": 1}]}
TRANSFER = {"operation": "transfer", "fences": [{"role": "from", "resource": "account/acct-1", "token": "1:7"}],
            "statements": [{"rows_affected": 1}]}
READ = {"operation": "balance", "resource": "account/acct-1", "token": "1:7", "fence": "1:7",
        "statements": [{"rows_affected": 1, "rows": [{"balance_cents": 700}]}]}
STATE = {"resource": "pool/p1", "revision": 9, "permits": 2, "waiting": 1, "transitions": 3,
         "holders": [{"permit": 1, "resource": "pool/p1#1", "token": "1:4#1", "ttl": 8, "value": "a", "transitions": 2}],
         "waiters": [{"value": "b"}]}
EVENT = {"type": "granted", "resource": "job/w", "revision": 6, "holder": {"token": "1:6", "value": ""}, "transitions": 1}


def decoders():
    return [
        lambda b: write_result(decode_object(b, "w"), False, "w"),
        lambda b: read_result(decode_object(b, "r"), "r"),
        lambda b: lock_state(decode_object(b, "o"), "o"),
        lambda b: watch_event(decode_object(b, "e"), "6", "e"),
    ]


class ResultsTest(unittest.TestCase):
    def test_answers(self) -> None:
        w = write_result(WRITE, True, "w")
        self.assertEqual(w.statements[0].rows, [{"id": "acct-1", "balance_cents": 700}])
        self.assertIsNone(w.statements[1].rows)
        self.assertTrue(w.replayed)
        self.assertEqual(write_result(TRANSFER, False, "w").fences[0].role, "from")
        self.assertEqual(read_result(READ, "r").fence, "1:7")
        st = lock_state(STATE, "o")
        self.assertEqual((st.permits, st.holders[0].permit, st.holders[0].holder.token, st.waiters[0].value), (2, 1, "1:4#1", "b"))
        self.assertIsNone(st.holder)
        ev = watch_event(EVENT, "6", "e")
        self.assertEqual((ev.type, ev.revision, ev.holder.token if ev.holder else None), ("granted", 6, "1:6"))

    def test_answers_that_are_none(self) -> None:
        for body in (b"", b"null", b"[]", b"{", b'{"rows": 1}', b'{"statements": "no"}', b'{"statements": [1]}',
                     b'{"statements": [{"rows_affected": true}]}', b'{"statements": [{"rows": [1]}]}', b"\xff\xfe"):
            with self.subTest(body=body):
                with self.assertRaises(fencegw.UnexpectedResponse):
                    write_result(decode_object(body, "w"), False, "w")

    def test_random_answers(self) -> None:
        """A bounded fuzz: mutations of good answers decode, or raise
        UnexpectedResponse; nothing else escapes."""
        rnd = random.Random(35)
        seeds = [json.dumps(d).encode() for d in (WRITE, TRANSFER, READ, STATE, EVENT)]
        for i in range(3000):
            body = bytearray(rnd.choice(seeds))
            for _ in range(rnd.randrange(1, 4)):
                pos = rnd.randrange(len(body))
                op = rnd.randrange(3)
                if op == 0:
                    del body[pos:pos + rnd.randrange(1, 8)]
                elif op == 1:
                    body[pos:pos] = rnd.choice([b"1", b"null", b"true", b"[", b"{}", b'"x"', b"-", b"\\u0000", b"9" * 400])
                else:
                    body[pos] = rnd.randrange(256)
            for decode in decoders():
                with self.subTest(i=i):
                    try:
                        decode(bytes(body))
                    except fencegw.UnexpectedResponse:
                        pass


if __name__ == "__main__":
    unittest.main()

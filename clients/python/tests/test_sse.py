"""The event-stream parser: the WHATWG format's lines, fed in pieces."""

from __future__ import annotations

import random
import unittest
from typing import List

from fencegw._sse import MAX_LINE, Message, SSEError, SSEParser

STREAM = (b": heartbeat\n"
          b"event: state\ndata: {\"type\":\"state\"}\n\n"
          b"id: 7\nevent: synced\ndata: {\"type\":\"synced\"}\n\n"
          b"id: 9\n\n"
          b"id: 12\r\nevent: granted\r\ndata: {\"type\":\r\ndata: \"granted\"}\r\n\r\n"
          b"id: 13\revent: released\rdata:{\"type\":\"released\"}\r\r")

WANT = [
    Message(None, "state", '{"type":"state"}'),
    Message("7", "synced", '{"type":"synced"}'),
    Message("9", "", ""),
    Message("12", "granted", '{"type":\n"granted"}'),
    Message("13", "released", '{"type":"released"}'),
]


def parse(chunks: List[bytes]) -> List[Message]:
    p = SSEParser()
    out: List[Message] = []
    for c in chunks:
        out.extend(p.feed(c))
    return out


class SSEParserTest(unittest.TestCase):
    def test_whole(self) -> None:
        self.assertEqual(parse([STREAM]), WANT)

    def test_split_anywhere(self) -> None:
        # One cut at every place: a CRLF split across reads included.
        for i in range(len(STREAM) + 1):
            with self.subTest(cut=i):
                self.assertEqual(parse([STREAM[:i], STREAM[i:]]), WANT)

    def test_byte_by_byte(self) -> None:
        self.assertEqual(parse([STREAM[i:i + 1] for i in range(len(STREAM))]), WANT)

    def test_an_event_cut_off_is_not_given(self) -> None:
        cut = b"id: 1\nevent: granted\ndata: {\"type\":\"granted\"}\n\nid: 2\nevent: released\ndata: {\"type\":\"rel"
        self.assertEqual(parse([cut]), [Message("1", "granted", '{"type":"granted"}')])
        # Its blank line never came: not given either.
        self.assertEqual(len(parse([b"id: 2\nevent: released\ndata: {}\n"])), 0)

    def test_an_id_with_a_nul_is_ignored(self) -> None:
        self.assertEqual(parse([b"id: 1\x002\ndata: x\n\n"]), [Message(None, "", "x")])

    def test_a_line_too_long(self) -> None:
        with self.assertRaises(SSEError):
            parse([b"data: " + b"x" * (MAX_LINE + 1)])
        with self.assertRaises(SSEError):
            parse([b"data: " + b"x" * MAX_LINE + b"\n\n"])

    def test_random_chunks_and_bytes(self) -> None:
        """A bounded fuzz: random chunking never changes the messages, and
        random bytes give messages or SSEError, nothing else."""
        rnd = random.Random(35)
        for i in range(500):
            cuts = sorted(rnd.sample(range(len(STREAM) + 1), rnd.randrange(1, 8)))
            chunks = [STREAM[a:b] for a, b in zip([0] + cuts, cuts + [len(STREAM)])]
            with self.subTest(i=i):
                self.assertEqual(parse(chunks), WANT)
        alphabet = b"id:eventdata \r\n:\x00\xff{}\"x"
        for i in range(2000):
            junk = bytes(rnd.choice(alphabet) for _ in range(rnd.randrange(200)))
            with self.subTest(junk=junk):
                try:
                    for m in parse([junk[:len(junk) // 2], junk[len(junk) // 2:]]):
                        self.assertIsInstance(m.data, str)
                        self.assertTrue(m.id is None or "\0" not in m.id)
                except SSEError:
                    pass


if __name__ == "__main__":
    unittest.main()

"""A watch resumes a stream that stops (mid-event too) after the last
event it handed on, ends on a refusal for good, and on close."""

from __future__ import annotations

import asyncio
import json
import threading
import unittest
from typing import Dict, List, Optional

import fencegw
from tests.fakegw import FakeGateway, Reply, Request, problem

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


def event(ev_id: Optional[int], typ: str, revision: int, **more: object) -> bytes:
    doc: Dict[str, object] = {"type": typ, "resource": "job/w", "revision": revision}
    doc.update(more)
    head = b"id: %d\n" % ev_id if ev_id is not None else b""
    return head + b"event: " + typ.encode() + b"\ndata: " + json.dumps(doc).encode() + b"\n\n"


FIRST = (HEAD + b": hello\n\n" + event(None, "state", 5, holder=None) + event(5, "synced", 5)
         + event(6, "granted", 6, holder={"token": "1:6", "value": ""}, transitions=1)
         + b"id: 7\nevent: released\ndata: {\"type\":\"rel")  # stops mid-event
SECOND = (HEAD + event(7, "released", 7, holder={"token": "1:6"}) + b"id: 8\n\n"
          + b"id: 9\nevent: granted\ndata: not json\n\n")  # an event that is none: resumed after 8
THIRD = HEAD + event(9, "granted", 9, holder={"token": "1:9"}, transitions=2)


class WatchTest(unittest.TestCase):
    def serve(self, streams: List[Reply]) -> FakeGateway:
        def route(req: Request) -> Reply:
            return streams.pop(0) if streams else problem("forbidden", 403, detail="outside the client's scope")

        fake = FakeGateway(route)
        self.addCleanup(fake.stop)
        return fake

    def client(self, fake: FakeGateway) -> fencegw.Gateway:
        gw = fencegw.Gateway(fake.url, timeout=5)
        self.addCleanup(gw.close)
        return gw

    def test_resumes_after_the_last_event_handed_on(self) -> None:
        fake = self.serve([Reply(raw=FIRST), Reply(raw=SECOND), Reply(raw=THIRD)])
        w = self.client(fake).watch("job/w")
        got = []
        with self.assertRaises(fencegw.Forbidden):
            for ev in w:
                got.append((ev.type, ev.revision))
        self.assertEqual(got, [("state", 5), ("synced", 5), ("granted", 6), ("released", 7), ("granted", 9)])
        resumed = [r.headers.get("last-event-id") for r in fake.requests]
        self.assertEqual(resumed, [None, "6", "8", "9"])
        self.assertEqual(list(w), [], "a watch refused for good goes on")

    def test_the_first_refusal_is_the_callers(self) -> None:
        fake = self.serve([])
        with self.assertRaises(fencegw.Forbidden):
            self.client(fake).watch("job/w")
        with self.assertRaises(fencegw.ConfigurationError):
            self.client(fake).watch(prefix="")

    def test_async_for(self) -> None:
        fake = self.serve([Reply(raw=FIRST), Reply(raw=SECOND), Reply(raw=THIRD)])
        gw = self.client(fake)

        async def main() -> List[str]:
            got = []
            async with gw.watch("job/w") as w:
                async for ev in w:
                    got.append(ev.type)
                    if len(got) == 5:
                        break
            return got

        self.assertEqual(asyncio.run(main()), ["state", "synced", "granted", "released", "granted"])

    def test_close_from_another_thread(self) -> None:
        done = threading.Event()
        self.addCleanup(done.set)
        fake = self.serve([Reply(raw=HEAD + event(5, "synced", 5), then_hold=done)])
        w = self.client(fake).watch("job/w")
        self.assertEqual(next(w).type, "synced")
        result: List[object] = []
        t = threading.Thread(target=lambda: result.append(next(w, "ended")))
        t.start()
        w.close()
        t.join(10)
        self.assertFalse(t.is_alive(), "next() did not return after close")
        self.assertEqual(result, ["ended"])


if __name__ == "__main__":
    unittest.main()

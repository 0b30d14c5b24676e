"""A watch of locks: an iterator (and async iterator) of events that
resumes a broken stream with Last-Event-ID, so that no change is missed."""

from __future__ import annotations

import asyncio
import collections
import http.client
import json
import socket
import threading
from typing import TYPE_CHECKING, Any, Deque, Optional

from ._sse import Message, SSEError, SSEParser
from ._transport import socket_of
from .errors import FencegwError, ProblemError, UnexpectedResponse
from .results import WatchEvent, watch_event

if TYPE_CHECKING:
    from .gateway import Gateway

# Reconnection backoff of a broken stream.
RETRY_MIN = 0.1
RETRY_MAX = 5.0
# A stream silent this long is dead: the gateway sends a heartbeat every
# 15 s.
READ_TIMEOUT = 45.0


def final(err: BaseException) -> bool:
    """Would the gateway refuse the watch again? A 4xx but 408 and 429."""
    return isinstance(err, ProblemError) and 400 <= err.status < 500 and err.status not in (408, 429) or (
        isinstance(err, UnexpectedResponse) and 400 <= err.status < 500)


class Watch:
    """Events of the locks watched: the state of each, ``synced``, then
    every change in etcd's order. A stream that breaks (a replica
    restarted, a proxy's timeout, a stream cut mid-event) is resumed after
    the last event handed on, with Last-Event-ID. The first request's
    refusal is raised by Gateway.watch; a later one for good (403, 400) by
    the next ``next()``, which ends the watch. ``close()`` ends it from
    any thread."""

    def __init__(self, gw: Gateway, query: str) -> None:
        self._gw = gw
        self._query = query
        self._last_id: Optional[str] = None
        self._mu = threading.Lock()
        self._conn: Optional[http.client.HTTPConnection] = None
        self._resp: Optional[http.client.HTTPResponse] = None
        self._parser = SSEParser()
        self._pending: Deque[Message] = collections.deque()
        self._closed = threading.Event()
        self._retry = RETRY_MIN
        self._open()

    @property
    def last_event_id(self) -> Optional[str]:
        """The id the watch resumes after."""
        return self._last_id

    def _open(self) -> None:
        headers = {}
        if self._last_id is not None:
            headers["Last-Event-ID"] = self._last_id
        conn, resp = self._gw._transport.open_stream("/v1/leases/watch?" + self._query, headers, READ_TIMEOUT)
        with self._mu:
            if self._closed.is_set():
                conn.close()
                return
            self._conn, self._resp, self._parser = conn, resp, SSEParser()
            self._pending.clear()

    def _drop(self) -> None:
        with self._mu:
            conn, self._conn, self._resp = self._conn, None, None
            self._pending.clear()
        if conn is not None:
            conn.close()

    def __iter__(self) -> Watch:
        return self

    def __next__(self) -> WatchEvent:
        while True:
            if self._closed.is_set():
                raise StopIteration
            if self._pending:
                ev = self._event(self._pending.popleft())
                if ev is not None:
                    self._retry = RETRY_MIN
                    return ev
                continue
            if self._resp is None:
                self._reconnect()
                continue
            try:
                chunk = self._resp.read1(16 << 10)
            except (OSError, http.client.HTTPException, ValueError, AttributeError):
                chunk = b""
            if not chunk:
                self._drop()
                continue
            try:
                self._pending.extend(self._parser.feed(chunk))
            except SSEError:
                self._drop()

    def _reconnect(self) -> None:
        if self._closed.wait(self._retry):
            return
        self._retry = min(2 * self._retry, RETRY_MAX)
        try:
            self._open()
        except FencegwError as e:
            if final(e):
                self.close()
                raise

    def _event(self, m: Message) -> Optional[WatchEvent]:
        """The event of m, or None: an id alone moves the id to resume
        after (every change up to it was sent); an event that is not one
        breaks the stream, resumed after the last good one."""
        if not m.data and not m.event:
            if m.id is not None:
                self._last_id = m.id
            return None
        try:
            doc: Any = json.loads(m.data)
            if not isinstance(doc, dict) or doc.get("type") != m.event:
                raise ValueError("not an event of its type")
            ev = watch_event(doc, m.id or "", "watch")
        except (ValueError, UnexpectedResponse, RecursionError):
            self._drop()
            return None
        if m.id is not None:
            self._last_id = m.id  # handed on now: a resumed stream starts after it
        return ev

    def close(self) -> None:
        """Ends the watch, from any thread; a next() under way returns."""
        self._closed.set()
        with self._mu:
            resp, conn = self._resp, self._conn
            self._resp, self._conn = None, None
        if resp is not None:
            sock = socket_of(resp)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        if conn is not None:
            conn.close()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # asyncio: each next() in a thread, so the event loop never blocks.

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> WatchEvent:
        loop = asyncio.get_running_loop()
        try:
            ev = await loop.run_in_executor(None, self._next_or_none)
        except asyncio.CancelledError:
            self.close()
            raise
        if ev is None:
            raise StopAsyncIteration
        return ev

    def _next_or_none(self) -> Optional[WatchEvent]:
        try:
            return next(self)
        except StopIteration:
            return None

    async def __aenter__(self) -> Watch:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

"""The HTTP layer: persistent connections per replica, failover to the
next replica when an answer is lost, and the retry rules every fencegw
client shares (docs/clients.md)."""

from __future__ import annotations

import http.client
import random
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ._credentials import Bearer, TLSContexts
from ._version import __version__
from .errors import (
    AuthorityHalted,
    ConfigurationError,
    GatewayUnreachable,
    MAX_ERROR_BODY,
    Unavailable,
    UnexpectedResponse,
    error_from_answer,
)

# How often one request is sent while its answers are lost: the first time
# and three more, each to the next replica, after a backoff.
ATTEMPTS = 4
BACKOFF_MIN = 0.1
BACKOFF_MAX = 1.0
# A success body beyond this is refused: a misbehaving server must not make
# the client buffer without bound.
MAX_RESULT_BODY = 32 << 20
# Idle connections kept per replica.
MAX_IDLE = 8

USER_AGENT = "fencegw-python/" + __version__


@dataclass
class Answer:
    status: int
    headers: Dict[str, str]  # lower-case names
    body: bytes


class _NotSent(Exception):
    """The connection failed before the request left: nothing was sent."""


class _Lost(Exception):
    """The request may have been sent; its answer did not come."""


class _Replica:
    def __init__(self, url: str, index: int, contexts: TLSContexts) -> None:
        u = urllib.parse.urlsplit(url)
        try:
            port = u.port
        except ValueError:
            port = None
            u = u._replace(netloc="")
        # The URL stays out of the message: it may hold a password.
        if u.scheme not in ("http", "https") or not u.hostname or u.query or u.fragment:
            raise ConfigurationError("gateway URL #%d is not http(s)://host[:port][/path]" % (index + 1))
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = port or (443 if self.https else 80)
        self.prefix = u.path.rstrip("/")
        self.name = "%s://%s:%d" % (u.scheme, self.host, self.port)
        self._contexts = contexts
        self._mu = threading.Lock()
        self._idle: List[http.client.HTTPConnection] = []

    def _take(self, timeout: float) -> Tuple[http.client.HTTPConnection, bool]:
        """An idle connection (reused: True), or a new one."""
        with self._mu:
            if self._idle:
                conn = self._idle.pop()
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                return conn, True
        return self.new_connection(timeout), False

    def new_connection(self, timeout: float) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self._contexts.context())
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _put(self, conn: http.client.HTTPConnection) -> None:
        with self._mu:
            if len(self._idle) < MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._mu:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def send(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str], timeout: float,
             stale_retry: bool) -> Answer:
        """One request, on an idle connection if there is one. A connection
        that was idle and turns out closed (the server's keep-alive timeout)
        is replaced once, at once, when stale_retry allows it."""
        conn, reused = self._take(timeout)
        try:
            return self._exchange(conn, method, path, body, headers)
        except _Lost as e:
            conn.close()
            if reused and stale_retry and isinstance(e.__cause__, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)):
                conn = self.new_connection(timeout)
                try:
                    return self._exchange(conn, method, path, body, headers)
                except BaseException:
                    conn.close()
                    raise
            raise
        except BaseException:
            conn.close()
            raise

    def _exchange(self, conn: http.client.HTTPConnection, method: str, path: str, body: Optional[bytes], headers: Dict[str, str]) -> Answer:
        if conn.sock is None:
            try:
                conn.connect()
            except ssl.SSLCertVerificationError:
                raise
            except (OSError, http.client.HTTPException) as e:
                raise _NotSent(str(e)) from e
        try:
            conn.request(method, self.prefix + path, body=body, headers=headers)
            resp = conn.getresponse()
            limit = MAX_RESULT_BODY if 200 <= resp.status < 300 else MAX_ERROR_BODY
            data = resp.read(limit + 1)
            if len(data) <= limit and resp.length:
                # read(n) returns what came before the connection closed.
                raise http.client.IncompleteRead(data, resp.length)
        except (OSError, http.client.HTTPException) as e:
            raise _Lost(str(e) or type(e).__name__) from e
        answer = Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        if len(data) > limit or resp.will_close or not resp.isclosed():
            conn.close()  # not read to its end, or the server closes it
            if len(data) > limit and 200 <= resp.status < 300:
                raise UnexpectedResponse("the %d answer is larger than %d bytes" % (resp.status, limit), status=resp.status)
            answer.body = data[:limit]
        else:
            self._put(conn)
        return answer


class Transport:
    """Requests to the gateway's replicas, asked in the order given: the
    first is preferred until its answer is lost, then the next one is, and
    so on round."""

    def __init__(self, urls: Sequence[str], bearer: Bearer, contexts: TLSContexts, timeout: float,
                 attempts: int = ATTEMPTS) -> None:
        if isinstance(urls, str):
            urls = [urls]
        if not urls:
            raise ConfigurationError("no gateway URL")
        self._replicas = [_Replica(u, i, contexts) for i, u in enumerate(urls)]
        self._bearer = bearer
        self._timeout = timeout
        self._attempts = attempts
        self._mu = threading.Lock()
        self._preferred = 0
        self.on_attempt: Optional[Callable[[str, str], None]] = None  # tests: (replica, path)

    @property
    def timeout(self) -> float:
        return self._timeout

    def close(self) -> None:
        for r in self._replicas:
            r.close()

    def request(self, method: str, path: str, *, body: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None,
                timeout: Optional[float] = None, resend: bool = False, deadline: Optional[float] = None,
                want: Sequence[int] = (200,)) -> Answer:
        """Sends the request and returns an answer of a status in want, or
        raises the error the answer describes.

        While the answer is lost (no connection, a broken one, a 502, 503
        or 504) the next replica becomes the preferred one and, if resend
        allows it (the request writes nothing, or carries its
        Idempotency-Key), the request is sent again after a backoff, up to
        ATTEMPTS times and until deadline (a time.monotonic() reading). The
        error raised then is the last one's, except that one that says
        "not applied" never hides an earlier attempt that may have been:
        that one's is raised."""
        hdrs = {"Accept": "application/json, application/problem+json", "User-Agent": USER_AGENT}
        if body is not None:
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        timeout = timeout if timeout is not None else self._timeout
        attempts = self._attempts if resend else 1
        stale_retry = resend or method != "POST" or path.endswith("/keepalive")
        # One credential for every attempt of the request; one that cannot
        # be read is a CredentialError, nothing sent.
        token = self._bearer.current()
        if token:
            hdrs["Authorization"] = "Bearer " + token
        backoff = BACKOFF_MIN
        unknown: Optional[Unavailable] = None
        last: Optional[Unavailable] = None
        reached = False
        for attempt in range(1, attempts + 1):
            t = timeout
            if deadline is not None:
                t = min(t, deadline - time.monotonic())
                if t <= 0:
                    break
            with self._mu:
                i = self._preferred
            replica = self._replicas[i]
            if self.on_attempt is not None:
                self.on_attempt(replica.name, path)
            try:
                answer = replica.send(method, path, body, hdrs, t, stale_retry)
            except ssl.SSLCertVerificationError as e:
                raise GatewayUnreachable(0, message="%s: the gateway's certificate: %s" % (replica.name, e.verify_message or e), outcome="not-applied") from None
            except _NotSent as e:
                err: Unavailable = GatewayUnreachable(0, message="%s: cannot connect: %s" % (replica.name, e), outcome="not-applied")
            except _Lost as e:
                reached = True
                err = Unavailable(0, message="%s: the answer was lost: %s" % (replica.name, e), outcome="unknown")
            else:
                reached = True
                if answer.status in want:
                    return answer
                failure = error_from_answer(answer.status, answer.headers.get("content-type", ""), answer.body)
                if isinstance(failure, AuthorityHalted) or not isinstance(failure, Unavailable):
                    raise failure
                err = failure
            with self._mu:
                if self._preferred == i:
                    self._preferred = (i + 1) % len(self._replicas)
            last = err
            if err.outcome != "not-applied":
                unknown = err
            if attempt == attempts:
                break
            pause = backoff * (0.5 + random.random() / 2)
            if deadline is not None and time.monotonic() + pause >= deadline:
                break
            time.sleep(pause)
            backoff = min(2 * backoff, BACKOFF_MAX)
        if last is None:
            raise GatewayUnreachable(0, message="no time left to send the request", outcome="not-applied")
        if not reached and isinstance(last, GatewayUnreachable) and len(self._replicas) > 1:
            raise GatewayUnreachable(0, message="no replica of %d could be reached: %s" % (len(self._replicas), last), outcome="not-applied")
        raise unknown if unknown is not None else last

    def open_stream(self, path: str, headers: Dict[str, str], timeout: float) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Opens a stream (a watch) on the preferred replica, once: its
        connection, apart from the pool, and the 200 answer to read from. A
        lost answer makes the next replica the preferred one."""
        hdrs = {"Accept": "text/event-stream, application/problem+json", "User-Agent": USER_AGENT}
        hdrs.update(headers)
        token = self._bearer.current()
        if token:
            hdrs["Authorization"] = "Bearer " + token
        with self._mu:
            i = self._preferred
        replica = self._replicas[i]
        conn = replica.new_connection(timeout)

        def lost(err: Unavailable) -> Unavailable:
            conn.close()
            with self._mu:
                if self._preferred == i:
                    self._preferred = (i + 1) % len(self._replicas)
            return err

        try:
            conn.connect()
        except ssl.SSLCertVerificationError as e:
            conn.close()
            raise GatewayUnreachable(0, message="%s: the gateway's certificate: %s" % (replica.name, e.verify_message or e), outcome="not-applied") from None
        except (OSError, http.client.HTTPException) as e:
            raise lost(GatewayUnreachable(0, message="%s: cannot connect: %s" % (replica.name, e), outcome="not-applied")) from None
        try:
            conn.request("GET", replica.prefix + path, headers=hdrs)
            resp = conn.getresponse()
            if resp.status == 200:
                return conn, resp
            data = resp.read(MAX_ERROR_BODY)
        except (OSError, http.client.HTTPException) as e:
            raise lost(Unavailable(0, message="%s: the answer was lost: %s" % (replica.name, e), outcome="unknown")) from None
        conn.close()
        err = error_from_answer(resp.status, resp.getheader("content-type") or "", data)
        if isinstance(err, Unavailable) and not isinstance(err, AuthorityHalted):
            raise lost(err)
        raise err



def socket_of(resp: http.client.HTTPResponse) -> Optional[socket.socket]:
    """The socket under a response, to shut down from another thread."""
    fp = getattr(resp, "fp", None)
    raw = getattr(fp, "raw", None)
    sock = getattr(raw, "_sock", None)
    return sock if isinstance(sock, socket.socket) else None



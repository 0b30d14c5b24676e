"""A stand-in for what sits between a client and the gateway: a local
HTTP/1.1 server whose answers a test writes byte for byte (a proxy's HTML
page, a body cut short, a stream that stops mid-event, a connection closed
without an answer). The client's dealings with the real gateway are proven
by the conformance suite (clients/conformance); these tests feed it what
the real gateway never sends."""

from __future__ import annotations

import http.server
import json
import socket
import socketserver
import threading
from typing import Any, Callable, Dict, List, Optional, Union


class Request:
    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes) -> None:
        self.method, self.path, self.headers, self.body = method, path, headers, body

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None

    def __repr__(self) -> str:
        return "%s %s" % (self.method, self.path)


class Reply:
    """What the server does: an answer; ``raw`` bytes written as they are
    (then the connection closes, after ``then_hold`` if set); ``close``
    closes without answering; ``hold`` waits for the event first."""

    def __init__(self, status: int = 200, body: Union[bytes, str, Any] = b"", content_type: str = "application/json",
                 headers: Optional[Dict[str, str]] = None, raw: Optional[bytes] = None, close: bool = False,
                 hold: Optional[threading.Event] = None, then_hold: Optional[threading.Event] = None) -> None:
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        self.status, self.content_type, self.headers = status, content_type, headers or {}
        self.body = body.encode("utf-8") if isinstance(body, str) else body
        self.raw, self.close, self.hold, self.then_hold = raw, close, hold, then_hold


def problem(kind: str, status: int, **fields: Any) -> Reply:
    doc = {"type": "urn:fencegw:problem:" + kind, "title": kind, "status": status}
    doc.update(fields)
    return Reply(status, doc, content_type="application/problem+json")


Route = Callable[[Request], Reply]


class FakeGateway:
    """Serves route(request) on 127.0.0.1 until stop(); records requests
    and counts connections."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.requests: List[Request] = []
        self.connections = 0
        self._mu = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with fake._mu:
                    fake.connections += 1

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                req = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with fake._mu:
                    fake.requests.append(req)
                reply = fake.route(req)
                if reply.hold is not None:
                    reply.hold.wait(30)
                if reply.close:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.raw is not None:
                    self.wfile.write(reply.raw)
                    self.wfile.flush()
                    if reply.then_hold is not None:
                        reply.then_hold.wait(30)
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST = do_DELETE = do_PATCH = _serve

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up first is what some tests do

        self._server = Server(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    def count(self, method: str, path_prefix: str) -> int:
        with self._mu:
            return sum(1 for r in self.requests if r.method == method and r.path.startswith(path_prefix))

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeGateway:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def dead_url() -> str:
    """A URL nothing listens at: connections are refused."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d" % port


def grant(lease_id: str = "1a2b", resource: str = "account/acct-1", token: str = "1:7:QUJDREVGR0hJSktMTU5PUA", ttl: int = 10) -> Reply:
    return Reply(201, {"lease_id": lease_id, "resource": resource, "token": token, "ttl": ttl})


def written(balance: int = 900) -> Reply:
    return Reply(200, {"operation": "debit", "resource": "account/acct-1", "token": "1:7",
                       "statements": [{"rows_affected": 1, "rows": [{"id": "acct-1", "balance_cents": balance}]}, {"rows_affected": 1}]})


def lease_routes(keepalive: Callable[[Request], Reply], ttl: int = 10, **more: Route) -> Route:
    """A gateway of one lease: acquisitions granted, keepalives as asked,
    releases 204, writes applied; more overrides by kind."""

    def route(req: Request) -> Reply:
        kind = kind_of(req)
        if kind in more:
            return more[kind](req)
        if kind == "acquire":
            return grant(ttl=ttl)
        if kind == "keepalive":
            return keepalive(req)
        if kind == "release":
            return Reply(204, b"")
        if kind == "write":
            return written()
        return problem("not-found", 404)

    return route


def kind_of(req: Request) -> str:
    p = req.path
    if req.method == "POST" and p == "/v1/leases":
        return "acquire"
    if req.method == "POST" and p.endswith("/keepalive"):
        return "keepalive"
    if req.method == "DELETE" and p.startswith("/v1/leases/"):
        return "release"
    if req.method == "POST" and p.startswith("/v1/ops/"):
        return "write"
    if req.method == "GET" and p.startswith("/v1/leases/watch"):
        return "watch"
    if req.method == "POST" and p == "/v1/fences/check":
        return "check"
    return "other"


def renewed(ttl: int = 10, token: str = "1:7:QUJDREVGR0hJSktMTU5PUA") -> Callable[[Request], Reply]:
    return lambda req: Reply(200, {"lease_id": "1a2b", "ttl": ttl, "token": token})


def keepalive_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("fencegw-keepalive-") and t.is_alive()]


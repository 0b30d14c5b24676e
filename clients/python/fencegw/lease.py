"""A lease: the lock on a resource held through the gateway, its fencing
token, and the thread that keeps it alive.

Safety: a lease is never proof that its holder still holds the lock. It
may end on the gateway before the client notices, never the other way
round (see ``deadline``), and a process can pause at any instant, for any
time, between a check of the lease and its write reaching PostgreSQL.
Only the fence in the database is the guarantee; the local deadline just
stops the client from sending writes that are obviously late."""

from __future__ import annotations

import datetime
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional

from ._wire import decode_object
from .errors import (
    FencegwError,
    LeaseError,
    LeaseExpired,
    LeaseLost,
    LeaseNotFound,
    LeaseReleased,
    UnexpectedResponse,
)
from .results import CheckResult, ReadResult, WriteResult

if TYPE_CHECKING:
    from .gateway import Gateway

# Keepalive retry bounds after a failure that is not the gateway's "gone":
# from MIN_RETRY, doubling up to MAX_RETRY (and TTL/3), until a keepalive
# succeeds or the local deadline ends the lease.
MIN_RETRY = 0.1
MAX_RETRY = 2.0
# How long a release may take, all attempts included.
RELEASE_TIMEOUT = 5.0


class RenewFailure:
    """A keepalive that failed and will be retried (the gateway unreachable,
    a 503, a proxy's page): ``left`` seconds remain before the lease's
    local deadline ends it."""

    def __init__(self, resource: str, lease_id: str, error: BaseException, left: float) -> None:
        self.resource, self.lease_id, self.error, self.left = resource, lease_id, error, left

    def __repr__(self) -> str:
        return "RenewFailure(%s, lease %s, %.3fs left: %s)" % (self.resource, self.lease_id, self.left, self.error)


class Lease:
    """A lock held on ``resource`` (a semaphore's permit slot, ``name#k``),
    renewed every TTL/3 by a thread the lease owns until it is released or
    lost. Its methods are safe to call from any thread.

    ``lost`` is set the moment the lease is lost (the gateway refused a
    keepalive, or the local deadline passed); every call on the lease then
    raises LeaseLost (LeaseExpired for the deadline), sending nothing. It
    is never taken again by itself."""

    def __init__(self, gw: Gateway, grant: Mapping[str, Any], name: str, sent: float, sent_wall: float,
                 margin: Optional[float]) -> None:
        self._gw = gw
        self.id: str = grant["lease_id"]
        self.resource: str = grant.get("resource") or name
        self.name = name
        permit, permits = grant.get("permit"), grant.get("permits")
        self.permit: int = permit if isinstance(permit, int) else 0
        self.permits: int = permits if isinstance(permits, int) else 0
        self._mu = threading.Lock()
        self._token: str = grant["token"]
        self.ttl: float = float(grant["ttl"])
        self._margin = margin if margin is not None else max(self.ttl / 10, 0.1)
        # From the request, not the answer: the gateway grants the TTL at
        # some instant after the request was sent.
        self._deadline = sent + self.ttl - self._margin
        self._deadline_wall = sent_wall + self.ttl - self._margin
        self._error: Optional[LeaseError] = None
        self._reported = False  # a loss was raised to the caller
        self._gone = False  # the gateway said the lease is gone
        self._released = False
        self.lost = threading.Event()
        self._on_lost: List[Callable[[], None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep_alive, name="fencegw-keepalive-" + self.id, daemon=True)
        # A slow grant: little may be left of the TTL counted from the
        # request, so the first keepalive goes at once.
        self._first_renewal = 0.0 if time.monotonic() - sent >= self.ttl / 3 else None

    def _start(self) -> None:
        self._thread.start()

    @property
    def token(self) -> str:
        """The fencing token, E:R:SIGNATURE: a capability, keep it out of
        logs. After a key rotation a keepalive brings it signed again: read
        it for each write rather than once."""
        with self._mu:
            return self._token

    @property
    def deadline(self) -> float:
        """The local deadline, a time.monotonic() reading: when the last
        successful acquisition or keepalive request was sent, plus the TTL
        granted, less the safety margin. The lease lasts on the gateway at
        least until then."""
        with self._mu:
            return self._deadline

    @property
    def error(self) -> Optional[LeaseError]:
        """None while the lease lasts, then why it ended."""
        with self._mu:
            self._expire_if_due()
            return self._error

    def ensure(self) -> None:
        """Raises LeaseLost (LeaseExpired) or LeaseReleased once the lease
        has ended; returns while it lasts."""
        with self._mu:
            self._expire_if_due()
            err = self._error
            if err is None:
                return
            if isinstance(err, LeaseLost):
                self._reported = True
        raise err._again()

    def write(self, operation: str, args: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None,
              not_after: Optional[datetime.datetime] = None) -> WriteResult:
        """Sends operation with args, fenced by the lease's token, under an
        Idempotency-Key (a new one, or yours) it sends again only while the
        answer is lost. Sends nothing once the lease has ended. A write
        already sent is not recalled when the lease ends: the fence decides
        its fate."""
        self.ensure()
        return self._gw.write(operation, args, token=self.token, idempotency_key=idempotency_key, not_after=not_after)

    def read(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> ReadResult:
        """A fenced read: rows only while no newer token has written the
        resource, else StaleToken."""
        self.ensure()
        return self._gw.read(operation, args, token=self.token)

    def check(self) -> CheckResult:
        """Is the token still current? StaleToken once a newer one wrote.
        The answer is already old when it arrives: the act it guards must
        still be made safe."""
        self.ensure()
        return self._gw.check(self.token, self.resource)

    def set_value(self, value: str) -> None:
        """Publishes value as the lock's value (a leader's address), while
        the lease holds the lock."""
        self.ensure()
        self._gw._set_value(self.id, value)

    def release(self, timeout: float = RELEASE_TIMEOUT) -> None:
        """Ends the lease and releases the lock on the gateway, so the next
        waiter gets it at once. Returns within timeout seconds whatever the
        gateway does: a lease whose release is not confirmed ends with its
        TTL on the gateway. Raises LeaseLost if the gateway says the lease
        was gone while the client still believed it held it (lost
        unnoticed); nothing after a release or a loss already seen."""
        end = time.monotonic() + timeout
        with self._mu:
            if self._released:
                return
            self._released = True
            self._expire_if_due()
            live = self._error is None
            if live:
                self._error = LeaseReleased("lease %s on %s was released" % (self.id, self.resource), lease_id=self.id, resource=self.resource)
            gone = self._gone
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(max(0.0, end - time.monotonic()))
        if gone:
            return
        try:
            self._gw._release(self.id, deadline=end)
        except LeaseNotFound as e:
            with self._mu:
                self._gone = True
            if live:
                raise LeaseLost("lease %s on %s was gone when released: lost unnoticed" % (self.id, self.resource),
                                lease_id=self.id, resource=self.resource) from e
        except FencegwError:
            pass  # unconfirmed: it ends with its TTL on the gateway
        else:
            with self._mu:
                self._gone = True

    # The keepalive thread.

    def _keep_alive(self) -> None:
        retry = MIN_RETRY
        wait = self._first_renewal if self._first_renewal is not None else self._renew_in()
        while True:
            left = self.deadline - time.monotonic()
            if self._stop.wait(max(0.0, min(wait, left))):
                return
            with self._mu:
                if self._expire_if_due():
                    return
            try:
                self._renew()
            except LeaseNotFound as e:
                with self._mu:
                    self._gone = True
                self._end(LeaseLost("lease %s on %s is gone: the gateway refused its keepalive" % (self.id, self.resource),
                                    lease_id=self.id, resource=self.resource), e)
                return
            except Exception as e:  # anything else is retried until the deadline
                if self._stop.is_set():
                    return
                self._gw._renew_failed(RenewFailure(self.resource, self.id, e, self.deadline - time.monotonic()))
                wait = retry
                retry = min(2 * retry, MAX_RETRY, max(self.ttl / 3, MIN_RETRY))
            else:
                retry = MIN_RETRY
                wait = self._renew_in()

    def _renew_in(self) -> float:
        """TTL/3, or half of what is left before the deadline if that is
        shorter (a large margin)."""
        with self._mu:
            return max(0.0, min(self.ttl / 3, (self._deadline - time.monotonic()) / 2))

    def _renew(self) -> None:
        sent, sent_wall = time.monotonic(), time.time()
        left = self.deadline - sent
        answer = self._gw._keepalive(self.id, timeout=max(0.05, min(self._gw._transport.timeout, left)))
        doc = decode_object(answer.body, "keepalive")
        ttl = doc.get("ttl")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 1:
            raise UnexpectedResponse("keepalive: the answer has no ttl of a second or more")
        token = doc.get("token")
        with self._mu:
            if self._error is not None:
                return
            # The newest grant is the gateway's word, even if shorter.
            self.ttl = float(ttl)
            self._deadline = sent + ttl - self._margin
            self._deadline_wall = sent_wall + ttl - self._margin
            # The same place in the order, signed again (a key rotation):
            # anything else is not this lease's token.
            if isinstance(token, str) and token != self._token and _place(token) == _place(self._token) and token != _place(token):
                self._token = token

    def _expire_if_due(self) -> bool:
        """Ends the lease if its deadline has passed; self._mu held. The
        monotonic clock decides, unless the wall clock says so first: the
        monotonic clock stops while the machine is suspended, the lease's
        TTL on the gateway does not, and a wall clock stepped forward can
        only end the lease early, which is safe."""
        if self._error is not None:
            return True
        if time.monotonic() < self._deadline and time.time() < self._deadline_wall:
            return False
        self._error = LeaseExpired("lease %s on %s passed its local deadline without a successful keepalive" % (self.id, self.resource),
                                   lease_id=self.id, resource=self.resource)
        self._fire_lost()
        return True

    def _end(self, err: LeaseError, cause: Optional[BaseException] = None) -> None:
        err.__cause__ = cause
        with self._mu:
            if self._error is not None:
                return
            self._error = err
            self._fire_lost()

    def _fire_lost(self) -> None:
        """Sets lost and tells who listens; self._mu held."""
        self.lost.set()
        for f in self._on_lost:
            try:
                f()
            except Exception:
                pass

    def _add_on_lost(self, f: Callable[[], None]) -> None:
        with self._mu:
            self._on_lost.append(f)
            fired = self.lost.is_set()
        if fired:
            f()

    def _loss_unreported(self) -> Optional[LeaseError]:
        """The loss, if the caller was never told of it by a raise."""
        with self._mu:
            self._expire_if_due()
            if isinstance(self._error, LeaseLost) and not self._reported:
                self._reported = True
                return self._error._again()
            return None

    def __repr__(self) -> str:
        return "Lease(%s on %s)" % (self.id, self.resource)


def _place(token: str) -> str:
    parts = token.split(":", 2)
    return ":".join(parts[:2])


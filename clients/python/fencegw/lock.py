"""``with gw.lock(...) as lease`` and ``async with gw.lock(...) as lease``:
a lease for the block, released on leaving it.

Leaving the block never blocks past a short bound (the release's). A lease
lost during the block makes the next call on it raise LeaseLost; a block
that made no call after its lease was lost gets LeaseLost raised on
leaving it, so that a loss is never silent. The lock is never taken again
by itself."""

from __future__ import annotations

import asyncio
import datetime
import functools
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional, TypeVar, Union

from .errors import LeaseError, LeaseLost
from .lease import RELEASE_TIMEOUT, Lease
from .leaseset import LeaseSet
from .results import CheckResult, ReadResult, WriteResult

if TYPE_CHECKING:
    from .gateway import Gateway

T = TypeVar("T")


class Lock:
    """What Gateway.lock returns: a context manager (sync or async) of a
    lease on one resource, or of a LeaseSet over several."""

    def __init__(self, acquire: Callable[[], Union[Lease, LeaseSet]]) -> None:
        self._acquire = acquire
        self._held: Optional[Union[Lease, LeaseSet]] = None

    def __enter__(self) -> Any:
        self._held = self._acquire()
        return self._held

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        held, self._held = self._held, None
        if held is not None:
            _leave(held, exc is not None)

    async def __aenter__(self) -> Any:
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, self._acquire)
        try:
            held = await asyncio.shield(fut)
        except asyncio.CancelledError:
            # The acquisition goes on in its thread: a lease it brings
            # back is released, never left to hold the lock for nobody.
            def release_late(f: "asyncio.Future[Union[Lease, LeaseSet]]") -> None:
                if not f.cancelled() and f.exception() is None:
                    loop.run_in_executor(None, functools.partial(_quiet_release, f.result()))

            fut.add_done_callback(release_late)
            raise
        self._held = held
        if isinstance(held, LeaseSet):
            return AsyncLeaseSet(held, loop)
        return AsyncLease(held, loop)

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        held, self._held = self._held, None
        if held is not None:
            await asyncio.get_running_loop().run_in_executor(None, functools.partial(_leave, held, exc is not None))


def _leave(held: Union[Lease, LeaseSet], failing: bool) -> None:
    """Releases held on leaving its block; unless the block is failing
    already, raises a loss the block was never told of."""
    unreported = held._loss_unreported()
    try:
        held.release(RELEASE_TIMEOUT)
    except LeaseLost as e:
        unreported = unreported or e
    if unreported is not None and not failing:
        raise unreported


def _quiet_release(held: Union[Lease, LeaseSet]) -> None:
    try:
        held.release(RELEASE_TIMEOUT)
    except LeaseError:
        pass


class _AsyncBase:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        #: set, on the event loop, the moment the lease is lost
        self.lost = asyncio.Event()

    def _set_lost(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self.lost.set)
        except RuntimeError:
            pass  # the loop is closed: nobody waits

    async def _call(self, f: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self._loop.run_in_executor(None, functools.partial(f, *args, **kwargs))


class AsyncLease(_AsyncBase):
    """A Lease for asyncio: the same lease, its calls made in a thread so
    that the event loop never blocks, and ``lost`` an asyncio.Event."""

    def __init__(self, lease: Lease, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.lease = lease
        lease._add_on_lost(self._set_lost)

    id = property(lambda self: self.lease.id)
    resource = property(lambda self: self.lease.resource)
    name = property(lambda self: self.lease.name)
    permit = property(lambda self: self.lease.permit)
    permits = property(lambda self: self.lease.permits)
    token = property(lambda self: self.lease.token)
    deadline = property(lambda self: self.lease.deadline)
    error = property(lambda self: self.lease.error)
    ttl = property(lambda self: self.lease.ttl)

    def ensure(self) -> None:
        self.lease.ensure()

    async def write(self, operation: str, args: Optional[Mapping[str, Any]] = None, *, idempotency_key: Optional[str] = None,
                    not_after: Optional[datetime.datetime] = None) -> WriteResult:
        self.lease.ensure()
        return await self._call(self.lease.write, operation, args, idempotency_key=idempotency_key, not_after=not_after)

    async def read(self, operation: str, args: Optional[Mapping[str, Any]] = None) -> ReadResult:
        self.lease.ensure()
        return await self._call(self.lease.read, operation, args)

    async def check(self) -> CheckResult:
        self.lease.ensure()
        return await self._call(self.lease.check)

    async def set_value(self, value: str) -> None:
        self.lease.ensure()
        await self._call(self.lease.set_value, value)

    async def release(self, timeout: float = RELEASE_TIMEOUT) -> None:
        await self._call(self.lease.release, timeout)


class AsyncLeaseSet(_AsyncBase):
    """A LeaseSet for asyncio."""

    def __init__(self, leases: LeaseSet, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.set = leases
        self.leases: List[AsyncLease] = [AsyncLease(l, loop) for l in leases.leases]
        for l in leases.leases:
            l._add_on_lost(self._set_lost)

    def lease(self, resource: str) -> Optional[AsyncLease]:
        for l in self.leases:
            if resource in (l.resource, l.name):
                return l
        return None

    error = property(lambda self: self.set.error)

    def ensure(self) -> None:
        self.set.ensure()

    async def write(self, operation: str, args: Optional[Mapping[str, Any]] = None, *, roles: Mapping[str, str],
                    idempotency_key: Optional[str] = None, not_after: Optional[datetime.datetime] = None) -> WriteResult:
        self.set.ensure()
        return await self._call(self.set.write, operation, args, roles=roles, idempotency_key=idempotency_key, not_after=not_after)

    async def release(self, timeout: float = RELEASE_TIMEOUT) -> None:
        await self._call(self.set.release, timeout)

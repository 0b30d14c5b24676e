"""Several leases held together, for a write fenced on several resources
(a transfer's two accounts)."""

from __future__ import annotations

import datetime
import threading
import time
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence

from .errors import ConfigurationError, FencegwError, LeaseError, LeaseLost
from .lease import RELEASE_TIMEOUT, Lease
from .results import WriteResult

if TYPE_CHECKING:
    from .gateway import Gateway


class LeaseSet:
    """Leases taken in canonical order (by resource name), all or none, so
    that two clients wanting overlapping sets never hold one each while
    waiting for the other's. ``lost`` is set as soon as any lease of the
    set is lost; then every call raises its loss."""

    def __init__(self, gw: Gateway, leases: Sequence[Lease]) -> None:
        self._gw = gw
        self.leases: List[Lease] = list(leases)
        self.lost = threading.Event()
        for lease in self.leases:
            lease._add_on_lost(self.lost.set)

    def lease(self, resource: str) -> Optional[Lease]:
        """The lease on resource (as asked, or a permit's slot), or None."""
        for lease in self.leases:
            if resource in (lease.resource, lease.name):
                return lease
        return None

    @property
    def error(self) -> Optional[LeaseError]:
        for lease in self.leases:
            err = lease.error
            if err is not None:
                return err
        return None

    def ensure(self) -> None:
        """Raises the first lease's loss (or release) once any has ended."""
        for lease in self.leases:
            lease.ensure()

    def write(self, operation: str, args: Optional[Mapping[str, Any]] = None, *, roles: Mapping[str, str],
              idempotency_key: Optional[str] = None, not_after: Optional[datetime.datetime] = None) -> WriteResult:
        """Sends operation fenced by the set's tokens: roles maps each role of
        the operation to the resource of the set that plays it, e.g.
        {"from": "account/acct-1", "to": "account/acct-2"}."""
        self.ensure()
        tokens = {}
        for role, resource in roles.items():
            lease = self.lease(resource)
            if lease is None:
                raise ConfigurationError("role %s's resource %s is not in the set" % (role, resource))
            tokens[role] = lease.token
        return self._gw.write(operation, args, token=tokens, idempotency_key=idempotency_key, not_after=not_after)

    def release(self, timeout: float = RELEASE_TIMEOUT) -> None:
        """Releases every lease, all within timeout; raises the first
        LeaseLost a release found (a loss unnoticed)."""
        end = time.monotonic() + timeout
        first: Optional[FencegwError] = None
        for lease in self.leases:
            try:
                lease.release(max(0.0, end - time.monotonic()))
            except LeaseLost as e:
                first = first or e
        if first is not None:
            raise first

    def _loss_unreported(self) -> Optional[LeaseError]:
        for lease in self.leases:
            err = lease._loss_unreported()
            if err is not None:
                return err
        return None

    def __repr__(self) -> str:
        return "LeaseSet(%s)" % ", ".join(l.resource for l in self.leases)

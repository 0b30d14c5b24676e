"""fencegw: the Python client of the fencegw gateway.

Hold a lock and write under its fencing token::

    from fencegw import Gateway, StaleToken

    gw = Gateway(["http://gw1:8080", "http://gw2:8080"], bearer_file="/var/run/secrets/fencegw")
    with gw.lock("account/acct-1", ttl=30, wait=10) as lease:
        lease.write("debit", {"account": "acct-1", "amount_cents": 100})

The lease renews itself every TTL/3; once it is lost, ``lease.lost`` is set
and the next call on it raises LeaseLost, sending nothing. Still, a frozen
process outlives any local check: only the fence in the database refuses
its late write (StaleToken). Standard library only."""

from ._credentials import TLS
from ._version import __version__
from ._wire import new_idempotency_key, unsigned
from .errors import (
    ApplicationError,
    AuthorityHalted,
    BadRequest,
    ConfigurationError,
    Constraint,
    CredentialError,
    DeadlinePassed,
    FencegwError,
    Forbidden,
    GatewayUnreachable,
    IdempotencyMismatch,
    InternalError,
    LeaseError,
    LeaseExpired,
    LeaseLost,
    LeaseNotFound,
    LeaseReleased,
    Locked,
    MethodNotAllowed,
    NoLock,
    NotFound,
    PreconditionFailed,
    ProblemError,
    StaleToken,
    TokenRejected,
    TokenRequired,
    TokenRetired,
    TooLarge,
    TooManyLeases,
    Unauthorized,
    Unavailable,
    UnexpectedResponse,
    UnknownOperation,
    UnsupportedEncoding,
    UnsupportedMediaType,
)
from .gateway import Gateway
from .lease import Lease, RenewFailure
from .leaseset import LeaseSet
from .lock import AsyncLease, AsyncLeaseSet, Lock
from .results import (
    BatchResult,
    BatchWrite,
    CheckResult,
    Contender,
    Fence,
    LockState,
    PermitHolder,
    ReadResult,
    Statement,
    WatchEvent,
    WriteResult,
)
from .watch import Watch

__all__ = [
    "ApplicationError", "AsyncLease", "AsyncLeaseSet", "AuthorityHalted", "BadRequest", "BatchResult", "BatchWrite",
    "CheckResult", "ConfigurationError", "Constraint", "Contender", "CredentialError", "DeadlinePassed", "Fence",
    "FencegwError", "Forbidden", "Gateway", "GatewayUnreachable", "IdempotencyMismatch", "InternalError", "Lease",
    "LeaseError", "LeaseExpired", "LeaseLost", "LeaseNotFound", "LeaseReleased", "LeaseSet", "Lock", "LockState",
    "Locked", "MethodNotAllowed", "NoLock", "NotFound", "PermitHolder", "PreconditionFailed",
    "ProblemError", "ReadResult", "RenewFailure", "StaleToken", "Statement", "TLS", "TokenRejected",
    "TokenRequired", "TokenRetired", "TooLarge", "TooManyLeases", "Unauthorized", "Unavailable",
    "UnexpectedResponse", "UnknownOperation", "UnsupportedEncoding", "UnsupportedMediaType", "Watch", "WatchEvent",
    "WriteResult", "new_idempotency_key", "unsigned",
]

"""Every error the client raises: one class per problem type the gateway
answers (docs/api.md, "Problems"), each carrying the problem document, and
the client's own (a lease lost, an answer that is not the gateway's, an
option refused before anything was sent)."""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Type

PROBLEM_TYPE_PREFIX = "urn:fencegw:problem:"


class FencegwError(Exception):
    """The base of every error of this package."""


class ConfigurationError(FencegwError, ValueError):
    """Options refused before anything was sent: no gateway URL, a TTL or
    wait out of range, a naive datetime, a credential file that cannot be
    read at start."""


class CredentialError(FencegwError):
    """The bearer file cannot be read (gone, empty, unreadable): nothing
    was sent. It is read again before each request, so a file put back
    ends it."""


class UnexpectedResponse(FencegwError):
    """An answer that is not the gateway's: a proxy's page of a status
    other than 502, 503 or 504, a body that does not decode, a success
    missing what it must hold. What the request did is unknown."""

    def __init__(self, message: str, *, status: int = 0, content_type: str = "", body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.content_type = content_type
        self.body = body


class LeaseError(FencegwError):
    """A lease can no longer be used: the base of LeaseLost and
    LeaseReleased."""

    def __init__(self, message: str, *, lease_id: str = "", resource: str = "") -> None:
        super().__init__(message)
        self.lease_id = lease_id
        self.resource = resource

    def _again(self) -> LeaseError:
        """A new instance like this one, to raise once more without
        growing the first one's traceback."""
        err = type(self)(str(self), lease_id=self.lease_id, resource=self.resource)
        err.__cause__ = self.__cause__
        return err


class LeaseLost(LeaseError):
    """The lease is gone: the gateway refused its keepalive (it expired
    there, or was revoked or released), or its local deadline passed
    (LeaseExpired). Another holder may have the lock: stop working on the
    resource. The client never takes it again by itself."""


class LeaseExpired(LeaseLost):
    """The lease's local deadline passed without a successful keepalive.
    The gateway may still hold it for a while; it will not for long."""


class LeaseReleased(LeaseError):
    """The lease was released (its block ended) and used afterwards."""


class ProblemError(FencegwError):
    """An error answer of the gateway: an RFC 9457 problem document.

    ``problem`` is the document as sent; the other attributes are its
    fields (``None`` when absent), ``status`` the answer's HTTP status and
    ``kind`` the type's suffix after ``urn:fencegw:problem:``."""

    def __init__(self, status: int, problem: Optional[Mapping[str, Any]] = None, *, message: str = "") -> None:
        self.status = status
        self.problem: Dict[str, Any] = dict(problem or {})
        doc = self.problem
        self.type = _text(doc.get("type"))
        self.kind = _kind(self.type)
        self.title = _text(doc.get("title"))
        self.detail = _text(doc.get("detail"))
        self.resource = _text(doc.get("resource"))
        self.operation = _text(doc.get("operation"))
        self.role = _text(doc.get("role"))
        self.presented_token = _text(doc.get("presented_token"))
        self.current_token = _text(doc.get("current_token"))
        self.instance = _text(doc.get("instance"))
        index = doc.get("index")
        self.index: Optional[int] = index if isinstance(index, int) and not isinstance(index, bool) else None
        super().__init__(message or self._message())

    def _message(self) -> str:
        name = self.kind or self.title or "problem"
        msg = "%d %s" % (self.status, printable(name, 64))
        if self.detail:
            msg += ": " + printable(self.detail, 512)
        return msg


class BadRequest(ProblemError):
    """bad-request (400): the request is malformed; ``detail`` says how."""


class Unauthorized(ProblemError):
    """unauthorized (401): no credential, or one that failed a check."""


class TokenRejected(ProblemError):
    """token-rejected (403): a token the authority did not issue for this
    resource and client, of another epoch, or not the live holder's."""


class TokenRetired(TokenRejected):
    """token-retired (403): signed by a key since retired; a client that
    writes with its keepalives' tokens never meets it. Take a new lease."""


class Forbidden(ProblemError):
    """forbidden (403): the client may not call this."""


class UnknownOperation(ProblemError):
    """unknown-operation (404): no such operation in the policy."""


class LeaseNotFound(ProblemError):
    """lease-not-found (404): the gateway no longer has the lease."""


class NotFound(ProblemError):
    """not-found (404): no such endpoint."""


class NoLock(ProblemError):
    """no-lock (404): an operator's revoke of a resource nobody holds."""


class MethodNotAllowed(ProblemError):
    """method-not-allowed (405)."""


class StaleToken(ProblemError):
    """stale-token (409): a newer token has written the resource. Stop:
    your turn is over. ``current_token`` names the fence."""


class DeadlinePassed(ProblemError):
    """deadline-passed (409): the write's not_after had passed by
    PostgreSQL's clock; nothing was written, nor will be."""


class PreconditionFailed(ProblemError):
    """precondition-failed (409): a statement's expected rows were not met
    (an insufficient balance); nothing was written."""


class Constraint(ProblemError):
    """constraint (409): a PostgreSQL constraint refused the write."""


class Locked(ProblemError):
    """locked (409): the wait for the lock ended with another holder,
    whose token is ``current_token`` (when the gateway can say)."""

    @property
    def holder(self) -> Optional[str]:
        return self.current_token


class TooLarge(ProblemError):
    """too-large (413): the body is larger than the gateway takes."""


class UnsupportedMediaType(ProblemError):
    """unsupported-media-type (415)."""


class UnsupportedEncoding(ProblemError):
    """unsupported-encoding (415)."""


class IdempotencyMismatch(ProblemError):
    """idempotency-mismatch (422): the key was used for another request."""


class TokenRequired(ProblemError):
    """token-required (428): no token, or none for one of the roles."""


class TooManyLeases(ProblemError):
    """too-many-leases (429): the client holds as many leases as it may."""


class InternalError(ProblemError):
    """internal (500): the gateway failed; its log says why (``instance``
    names the request)."""


class ApplicationError(ProblemError):
    """application (the status the SQL raised): the operation's own rule
    refused the write (SQLSTATE PTxyz)."""


class Unavailable(ProblemError):
    """unavailable (503), or any 502, 503 or 504, or no answer at all.

    ``outcome`` says what became of the request: ``"not-applied"``
    (nothing was written: send it again as it is) or ``"unknown"`` (it may
    have been: send it again only under the same Idempotency-Key, which
    the client's own retries do). Raised once the client's retries are
    spent."""

    def __init__(self, status: int, problem: Optional[Mapping[str, Any]] = None, *, message: str = "", outcome: str = "") -> None:
        super().__init__(status, problem, message=message)
        given = self.problem.get("outcome")
        self.outcome = outcome or (given if given in ("not-applied", "unknown") else "unknown")


class AuthorityHalted(Unavailable):
    """authority-halted (503): etcd went back in time; an operator must
    act (fencegw epoch bump). Not retried by the client."""


class GatewayUnreachable(Unavailable):
    """No replica could be reached: every connection failed. ``outcome``
    is ``"not-applied"`` when no attempt reached a gateway."""


PROBLEM_CLASSES: Dict[str, Type[ProblemError]] = {
    "bad-request": BadRequest,
    "unauthorized": Unauthorized,
    "token-rejected": TokenRejected,
    "token-retired": TokenRetired,
    "forbidden": Forbidden,
    "unknown-operation": UnknownOperation,
    "lease-not-found": LeaseNotFound,
    "not-found": NotFound,
    "no-lock": NoLock,
    "method-not-allowed": MethodNotAllowed,
    "stale-token": StaleToken,
    "deadline-passed": DeadlinePassed,
    "precondition-failed": PreconditionFailed,
    "constraint": Constraint,
    "locked": Locked,
    "too-large": TooLarge,
    "unsupported-media-type": UnsupportedMediaType,
    "unsupported-encoding": UnsupportedEncoding,
    "idempotency-mismatch": IdempotencyMismatch,
    "token-required": TokenRequired,
    "too-many-leases": TooManyLeases,
    "internal": InternalError,
    "application": ApplicationError,
    "unavailable": Unavailable,
    "authority-halted": AuthorityHalted,
}

# An error body beyond this is cut: a problem document is well under 1 KiB.
MAX_ERROR_BODY = 64 << 10


def error_from_answer(status: int, content_type: str, body: bytes) -> FencegwError:
    """The error an answer of status (not the call's success) describes: the
    problem's class, Unavailable for any 502, 503 or 504 that is no problem
    document, UnexpectedResponse for anything else that is none."""
    doc = _problem_document(content_type, body)
    if doc is None:
        ct = printable(content_type, 64) or "no content type"
        text = printable(body[:MAX_ERROR_BODY].decode("utf-8", "replace"), 200)
        msg = "%d (%s), not a problem document%s" % (status, ct, ": " + text if text else "")
        if status in (502, 503, 504):
            return Unavailable(status, None, message=msg, outcome="unknown")
        return UnexpectedResponse(msg, status=status, content_type=content_type, body=text)
    kind = _kind(_text(doc.get("type")))
    cls = PROBLEM_CLASSES.get(kind or "")
    if cls is None:
        # A type this client does not know (a policy's own, a newer
        # gateway's) or none: the status still says what it can.
        cls = Unavailable if status in (502, 503, 504) else ProblemError
    return cls(status, doc)


def _problem_document(content_type: str, body: bytes) -> Optional[Dict[str, Any]]:
    media = content_type.split(";", 1)[0].strip().lower()
    if media != "application/problem+json":
        return None
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def _text(v: Any) -> Optional[str]:
    return v if isinstance(v, str) else None


def _kind(problem_type: Optional[str]) -> Optional[str]:
    if problem_type and problem_type.startswith(PROBLEM_TYPE_PREFIX) and len(problem_type) > len(PROBLEM_TYPE_PREFIX):
        return problem_type[len(PROBLEM_TYPE_PREFIX):]
    return None


def printable(s: str, limit: int) -> str:
    """Untrusted text made safe for a message: no control characters, runs
    of white space as one space, cut to about limit characters."""
    out = []
    n = 0
    space = False
    for ch in s:
        if ch.isspace():
            space = n > 0
            continue
        if not ch.isprintable():
            ch = "?"
        add = len(ch) + (1 if space else 0)
        if n + add > limit:
            out.append("…")
            break
        if space:
            out.append(" ")
            space = False
        out.append(ch)
        n += add
    return "".join(out)

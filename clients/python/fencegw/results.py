"""What the gateway answers, decoded and checked: a success whose body
lacks what it must hold is an UnexpectedResponse, never a half-filled
result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

from .errors import UnexpectedResponse


@dataclass(frozen=True)
class Statement:
    """One statement's outcome: rows affected, and rows returned (None for
    a statement that returns none)."""

    rows_affected: int
    rows: Optional[List[Dict[str, Any]]]


@dataclass(frozen=True)
class Fence:
    """One role's resource and token in an answer (and, in a read or a
    check, the fence it was held to; "" when never written)."""

    role: str
    resource: str
    token: str
    fence: str = ""


@dataclass(frozen=True)
class WriteResult:
    """An applied write. ``replayed`` is true when the answer is the stored
    one of the write's first execution (a retry under its key): it ran
    once, earlier."""

    operation: str
    resource: str
    token: str
    fences: List[Fence]
    statements: List[Statement]
    replayed: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class ReadResult:
    """A fenced read: the rows, and the fence each token was held to."""

    operation: str
    resource: str
    token: str
    fence: str
    fences: List[Fence]
    statements: List[Statement]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class CheckResult:
    """A fence check: each role's token and the fence it was held to."""

    fences: List[Fence]


@dataclass(frozen=True)
class BatchResult:
    """An applied batch: one result per write, in order."""

    writes: List[WriteResult]
    replayed: bool = False


@dataclass(frozen=True)
class BatchWrite:
    """One write of a batch: its token is a string, or a mapping of role
    to token for an operation with several resources."""

    operation: str
    args: Mapping[str, Any]
    token: Union[str, Mapping[str, str]]


@dataclass(frozen=True)
class Contender:
    """A holder or waiter as anyone may see it: its place in the order
    (an unsigned token), its remaining TTL in seconds, its value."""

    token: str
    ttl: int
    value: str


@dataclass(frozen=True)
class PermitHolder:
    """A held slot of a semaphore."""

    permit: int
    resource: str
    holder: Contender
    transitions: int


@dataclass(frozen=True)
class LockState:
    """A lock as the gateway shows it (a semaphore's: ``permits`` and its
    held slots in ``holders``)."""

    resource: str
    revision: int
    holder: Optional[Contender]
    waiters: List[Contender]
    waiting: int
    transitions: int
    permits: int
    holders: List[PermitHolder]


@dataclass(frozen=True)
class WatchEvent:
    """A watch's event: ``state`` (one per lock), ``synced``, then each
    change: ``granted``, ``value``, ``released``, ``expired``, ``revoked``,
    ``ended``; ``relist`` when etcd forgot changes the watch had not seen
    (what the reader knew is void; the state follows again)."""

    type: str
    resource: str
    revision: int
    holder: Optional[Contender]
    transitions: int
    permit: int
    id: str = ""


def _get(doc: Mapping[str, Any], key: str, kind: type, what: str, required: bool = False, default: Any = None) -> Any:
    v = doc.get(key)
    if v is None:
        if required:
            raise UnexpectedResponse("%s: the answer lacks %s" % (what, key))
        return default
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise UnexpectedResponse("%s: %s is not an integer" % (what, key))
    if kind is not int and not isinstance(v, kind):
        raise UnexpectedResponse("%s: %s is not a %s" % (what, key, kind.__name__))
    return v


def statements(doc: Mapping[str, Any], what: str) -> List[Statement]:
    out = []
    for st in _get(doc, "statements", list, what, default=[]):
        if not isinstance(st, dict):
            raise UnexpectedResponse("%s: a statement is not an object" % what)
        rows = _get(st, "rows", list, what)
        if rows is not None and not all(isinstance(r, dict) for r in rows):
            raise UnexpectedResponse("%s: a row is not an object" % what)
        out.append(Statement(_get(st, "rows_affected", int, what, default=0), rows))
    return out


def fences(doc: Mapping[str, Any], what: str) -> List[Fence]:
    out = []
    for f in _get(doc, "fences", list, what, default=[]):
        if not isinstance(f, dict):
            raise UnexpectedResponse("%s: a fence is not an object" % what)
        out.append(Fence(_get(f, "role", str, what, default=""), _get(f, "resource", str, what, default=""),
                         _get(f, "token", str, what, default=""), _get(f, "fence", str, what, default="")))
    return out


def write_result(doc: Mapping[str, Any], replayed: bool, what: str) -> WriteResult:
    if "statements" not in doc:
        raise UnexpectedResponse("%s: the answer lacks statements" % what)
    return WriteResult(_get(doc, "operation", str, what, default=""), _get(doc, "resource", str, what, default=""),
                       _get(doc, "token", str, what, default=""), fences(doc, what), statements(doc, what), replayed, dict(doc))


def read_result(doc: Mapping[str, Any], what: str) -> ReadResult:
    if "statements" not in doc:
        raise UnexpectedResponse("%s: the answer lacks statements" % what)
    return ReadResult(_get(doc, "operation", str, what, default=""), _get(doc, "resource", str, what, default=""),
                      _get(doc, "token", str, what, default=""), _get(doc, "fence", str, what, default=""),
                      fences(doc, what), statements(doc, what), dict(doc))


def contender(v: Any, what: str) -> Optional[Contender]:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise UnexpectedResponse("%s: a holder is not an object" % what)
    return Contender(_get(v, "token", str, what, default=""), _get(v, "ttl", int, what, default=0), _get(v, "value", str, what, default=""))


def lock_state(doc: Mapping[str, Any], what: str) -> LockState:
    holders = []
    for h in _get(doc, "holders", list, what, default=[]):
        if not isinstance(h, dict):
            raise UnexpectedResponse("%s: a holder is not an object" % what)
        holders.append(PermitHolder(_get(h, "permit", int, what, default=0), _get(h, "resource", str, what, default=""),
                                    contender(h, what) or Contender("", 0, ""), _get(h, "transitions", int, what, default=0)))
    waiters = [contender(w, what) for w in _get(doc, "waiters", list, what, default=[])]
    return LockState(_get(doc, "resource", str, what, default=""), _get(doc, "revision", int, what, default=0),
                     contender(doc.get("holder"), what), [w for w in waiters if w is not None],
                     _get(doc, "waiting", int, what, default=0), _get(doc, "transitions", int, what, default=0),
                     _get(doc, "permits", int, what, default=0), holders)


def watch_event(doc: Mapping[str, Any], event_id: str, what: str) -> WatchEvent:
    return WatchEvent(_get(doc, "type", str, what, required=True), _get(doc, "resource", str, what, default=""),
                      _get(doc, "revision", int, what, default=0), contender(doc.get("holder"), what),
                      _get(doc, "transitions", int, what, default=0), _get(doc, "permit", int, what, default=0), event_id)

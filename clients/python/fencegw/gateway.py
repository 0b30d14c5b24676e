"""Gateway: a client of a fencegw gateway, one replica or several."""

from __future__ import annotations

import datetime
import math
import ssl
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ._credentials import TLS, Bearer, TLSContexts
from ._transport import Answer, Transport
from ._wire import (
    IDEMPOTENCY_HEADER,
    NOT_AFTER_HEADER,
    REPLAYED_HEADER,
    TOKEN_HEADER,
    decode_object,
    encode,
    idempotency_header,
    new_idempotency_key,
    not_after_header,
    token_field,
)
from .errors import ConfigurationError, FencegwError, LeaseError, LeaseLost, LeaseNotFound, Unavailable, UnexpectedResponse
from .lease import Lease, RenewFailure
from .leaseset import LeaseSet
from .lock import Lock
from .results import (
    BatchResult,
    BatchWrite,
    CheckResult,
    LockState,
    ReadResult,
    WriteResult,
    fences,
    lock_state,
    read_result,
    write_result,
)
from .watch import Watch

# The gateway's bounds of a lease request (docs/api.md).
MAX_TTL = 3600
MAX_WAIT = 300
MAX_VALUE = 4096
MAX_PERMITS = 1000
DEFAULT_TTL = 10.0


class Gateway:
    """A client of a fencegw gateway, safe to share between threads.

    ``urls`` is one base URL or several, replicas asked in the order given:
    a request whose answer is lost (the replica down, its connection
    broken, a 502, 503 or 504) goes to the next, which is asked first from
    then on, when it is safe to send it again: acquisitions and writes
    under their Idempotency-Key, and requests that write nothing. A
    connection is kept open per replica and reused.

    ``bearer`` is the token sent as ``Authorization: Bearer``;
    ``bearer_file`` a file holding it (a projected service account
    token), read again before each request when it changed. ``tls`` is a
    TLS of PEM files (a CA, a client certificate and key) or an
    ssl.SSLContext. ``timeout`` bounds each request's wait for an answer
    (an acquisition's: its wait, and this). ``on_renew_failure`` is called,
    on a lease's keepalive thread, with each RenewFailure: a keepalive
    that failed and will be retried."""

    def __init__(self, urls: Union[str, Sequence[str]], *, bearer: Optional[str] = None, bearer_file: Optional[str] = None,
                 tls: Union[TLS, ssl.SSLContext, None] = None, timeout: float = 30.0,
                 on_renew_failure: Optional[Callable[[RenewFailure], None]] = None) -> None:
        if not timeout > 0:
            raise ConfigurationError("timeout must be more than 0 seconds")
        self._transport = Transport(urls, Bearer(bearer, bearer_file), TLSContexts(tls), timeout)
        self._on_renew_failure = on_renew_failure

    def close(self) -> None:
        """Closes the idle connections. Leases and watches still open keep
        theirs until they end."""
        self._transport.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # Leases.

    def lock(self, resources: Union[str, Sequence[str]], *, ttl: float = DEFAULT_TTL, wait: float = 0,
             permits: Optional[int] = None, value: Optional[str] = None, safety_margin: Optional[float] = None,
             idempotency_key: Optional[str] = None) -> Lock:
        """A lock for a with (or async with) block: the lease on resources,
        or on each of several, taken in canonical order, all or none (a
        LeaseSet). See acquire for the options. The options are checked
        here, before anything is sent."""
        check_lease_options(ttl, wait, permits, value, safety_margin)
        if isinstance(resources, str):
            name = resources
            return Lock(lambda: self.acquire(name, ttl=ttl, wait=wait, permits=permits, value=value,
                                             safety_margin=safety_margin, idempotency_key=idempotency_key))
        names = list(resources)
        if idempotency_key is not None:
            raise ConfigurationError("an idempotency key names one acquisition, not a set's")
        return Lock(lambda: self.acquire_all(names, ttl=ttl, wait=wait, permits=permits, value=value, safety_margin=safety_margin))

    def acquire(self, resource: str, *, ttl: float = DEFAULT_TTL, wait: float = 0, permits: Optional[int] = None,
                value: Optional[str] = None, safety_margin: Optional[float] = None,
                idempotency_key: Optional[str] = None) -> Lease:
        """Takes the lock on resource (on a semaphore, ``permits`` of it: a
        free permit slot) and returns the lease, kept alive until released.
        ``ttl`` is 1 s to 1 h (sent in whole seconds, rounded up), ``wait``
        how long the gateway may wait for the holder (up to 300 s; 0: at
        once, else Locked), ``safety_margin`` what is taken off the local
        deadline (default max(TTL/10, 0.1 s)), ``value`` what observers of
        the lock see (up to 4 KiB).

        The acquisition carries an Idempotency-Key (yours, or a new one):
        an answer lost on the way is asked for again under it, so the
        lease the gateway granted is the one returned, never a second."""
        check_lease_options(ttl, wait, permits, value, safety_margin)
        body: Dict[str, Any] = {"resource": resource, "ttl": int(math.ceil(ttl)), "wait": wait}
        if value is not None:
            body["value"] = value
        if permits is not None:
            body["permits"] = permits
        key = idempotency_key if idempotency_key is not None else new_idempotency_key()
        # The deadline counts from before the request: the gateway grants
        # the TTL at some later instant.
        sent, sent_wall = time.monotonic(), time.time()
        answer = self._transport.request("POST", "/v1/leases", body=encode(body), resend=True, want=(201,),
                                         headers={IDEMPOTENCY_HEADER: idempotency_header(key)},
                                         timeout=self._transport.timeout + wait)
        grant = decode_object(answer.body, "acquire " + resource)
        lease_id, token, granted = grant.get("lease_id"), grant.get("token"), grant.get("ttl")
        if not isinstance(lease_id, str) or not lease_id or not isinstance(token, str) or not token or \
                not isinstance(granted, int) or isinstance(granted, bool) or granted < 1:
            if isinstance(lease_id, str) and lease_id:
                self._release_quietly(lease_id)
            raise UnexpectedResponse("acquire %s: the 201 answer lacks lease_id, token or ttl" % resource, status=201)
        margin = safety_margin
        if margin is not None and margin >= granted:
            margin = None  # the gateway granted less than asked: its default
        if time.monotonic() - sent >= granted / 3:
            # After a long wait (or a slow answer) little may be left of the
            # TTL counted from the request, though the gateway renewed the
            # lease while it waited and when it granted the lock: a keepalive
            # now, before the deadline is counted, tells how long it really
            # lasts. If its answer is lost, the deadline stays counted from
            # the request.
            sent, sent_wall = self._renew_grant(resource, grant, sent, sent_wall)
        lease = Lease(self, grant, resource, sent, sent_wall, margin)
        try:
            lease.ensure()  # a grant that came after its whole TTL
        except LeaseError:
            self._release_quietly(lease_id)
            raise
        lease._start()
        return lease

    def acquire_all(self, resources: Sequence[str], **options: Any) -> LeaseSet:
        """Takes a lease on each of resources, in canonical order, all or
        none: if one cannot be had, those taken are released and its error
        raised."""
        names = sorted(resources)
        if not names or len(set(names)) != len(names):
            raise ConfigurationError("want one or more distinct resources")
        taken: List[Lease] = []
        try:
            for name in names:
                taken.append(self.acquire(name, **options))
        except BaseException:
            for lease in taken:
                try:
                    lease.release()
                except FencegwError:
                    pass
            raise
        return LeaseSet(self, taken)

    def observe(self, resource: str) -> LockState:
        """The lock's holder and line (a semaphore's held slots), as anyone
        may see them: for leader election, who leads."""
        answer = self._transport.request("GET", "/v1/leases?resource=" + urllib.parse.quote(resource, safe=""), resend=True)
        return lock_state(decode_object(answer.body, "observe"), "observe " + resource)

    def watch(self, resource: Optional[str] = None, *, prefix: Optional[str] = None) -> Watch:
        """An iterator (and async iterator) of the events of resource's
        lock, or of every lock under prefix. Close it (or use it in a with
        block) when done."""
        if (resource is None) == (prefix is None) or (prefix is not None and not prefix):
            raise ConfigurationError("watch a resource, or a prefix that is not empty")
        query = "resource=" + urllib.parse.quote(resource, safe="") if resource is not None else "prefix=" + urllib.parse.quote(prefix or "", safe="")
        return Watch(self, query)

    # Writes.

    def write(self, operation: str, args: Optional[Mapping[str, Any]] = None, *, token: Union[str, Mapping[str, str], None],
              idempotency_key: Optional[str] = None, not_after: Optional[datetime.datetime] = None) -> WriteResult:
        """Sends operation with args fenced by token (for an operation with
        several resources, a mapping of role to token), for a token held
        some other way, such as FENCING_TOKEN under ``fencegw lock``. It
        runs under an Idempotency-Key (a new one, or yours) and is sent
        again under it, to the next replica, while its answer is lost: it
        applies once at most, and a retry of one that did is answered with
        its first answer (``replayed``). A final answer, applied or
        refused, is never sent again. ``not_after`` (an aware datetime) is
        its business deadline: past it, by PostgreSQL's clock, the write is
        refused (DeadlinePassed)."""
        headers = self._write_headers(idempotency_key, not_after)
        if token:
            headers[TOKEN_HEADER] = token_field(token)
        answer = self._transport.request("POST", "/v1/ops/" + urllib.parse.quote(operation, safe=""),
                                         body=encode(dict(args or {})), headers=headers, resend=True)
        return write_result(decode_object(answer.body, "write " + operation), _replayed(answer), "write " + operation)

    def batch(self, writes: Sequence[Union[BatchWrite, Mapping[str, Any]]], *, idempotency_key: Optional[str] = None,
              not_after: Optional[datetime.datetime] = None) -> BatchResult:
        """Sends writes in one transaction, all or none; a refusal is the
        refusing write's error, its ``index`` set. Retried as write is."""
        wire = []
        for w in writes:
            if isinstance(w, BatchWrite):
                wire.append({"operation": w.operation, "args": dict(w.args or {}), "token": w.token})
            else:
                wire.append({"operation": w["operation"], "args": dict(w.get("args") or {}), "token": w["token"]})
        answer = self._transport.request("POST", "/v1/batch", body=encode({"writes": wire}),
                                         headers=self._write_headers(idempotency_key, not_after), resend=True)
        doc = decode_object(answer.body, "batch")
        results = doc.get("writes")
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise UnexpectedResponse("batch: the answer lacks its writes")
        replayed = _replayed(answer)
        return BatchResult([write_result(r, replayed, "batch") for r in results], replayed)

    def read(self, operation: str, args: Optional[Mapping[str, Any]] = None, *, token: Union[str, Mapping[str, str]]) -> ReadResult:
        """A fenced read of operation (access: read): the rows only while no
        token is older than its fence, else StaleToken. Writes nothing:
        sent again freely."""
        answer = self._transport.request("POST", "/v1/reads/" + urllib.parse.quote(operation, safe=""),
                                         body=encode(dict(args or {})), headers={TOKEN_HEADER: token_field(token)}, resend=True)
        return read_result(decode_object(answer.body, "read " + operation), "read " + operation)

    def check(self, token: Union[str, Mapping[str, str]], resource: Optional[str] = None, *,
              resources: Optional[Mapping[str, str]] = None) -> CheckResult:
        """Is token still current for resource (or each role's token for its
        resource)? StaleToken once a newer one has written."""
        body: Dict[str, Any] = {"resources": dict(resources)} if resources is not None else {"resource": resource}
        answer = self._transport.request("POST", "/v1/fences/check", body=encode(body),
                                         headers={TOKEN_HEADER: token_field(token)}, resend=True)
        doc = decode_object(answer.body, "check")
        if not isinstance(doc.get("fences"), list):
            raise UnexpectedResponse("check: the answer lacks its fences")
        return CheckResult(fences(doc, "check"))

    # The operator's verbs (a client with operations ["*"]).

    def revoke(self, *, reason: str, resource: Optional[str] = None, lease_id: Optional[str] = None,
               dry_run: bool = False) -> Dict[str, Any]:
        """Revokes the lease holding resource's lock, or lease_id, whoever
        owns it; NoLock when nobody holds it."""
        body: Dict[str, Any] = {"reason": reason, "dry_run": dry_run}
        if resource is not None:
            body["resource"] = resource
        if lease_id is not None:
            body["lease_id"] = lease_id
        answer = self._transport.request("POST", "/v1/admin/leases/revoke", body=encode(body))
        return decode_object(answer.body, "revoke")

    def advance_fence(self, resource: str, *, reason: str, dry_run: bool = False) -> Dict[str, Any]:
        """Moves resource's fence past every token issued so far (a
        resource never written under gets its fence row)."""
        answer = self._transport.request("POST", "/v1/admin/fences/advance",
                                         body=encode({"resource": resource, "reason": reason, "dry_run": dry_run}))
        return decode_object(answer.body, "advance fence")

    # For leases.

    def _renew_grant(self, resource: str, grant: Dict[str, Any], sent: float, sent_wall: float) -> Tuple[float, float]:
        """Renews a lease just granted after a long wait, updating grant's
        TTL and token; returns when the renewal was sent, or sent and
        sent_wall as they were if its answer is lost. A lease gone is
        LeaseLost; any other refusal releases it and is raised."""
        lease_id: str = grant["lease_id"]
        renewal, renewal_wall = time.monotonic(), time.time()
        try:
            doc = decode_object(self._keepalive(lease_id, self._transport.timeout).body, "keepalive")
        except LeaseNotFound as e:
            raise LeaseLost("acquire %s: lease %s was gone when renewed after the wait" % (resource, lease_id),
                            lease_id=lease_id, resource=resource) from e
        except Unavailable:
            return sent, sent_wall
        except FencegwError:
            self._release_quietly(lease_id)
            raise
        ttl, token = doc.get("ttl"), doc.get("token")
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 1:
            return sent, sent_wall
        grant["ttl"] = ttl
        if isinstance(token, str) and token:
            grant["token"] = token
        return renewal, renewal_wall

    def _keepalive(self, lease_id: str, timeout: float) -> Answer:
        return self._transport.request("POST", _lease_path(lease_id) + "/keepalive", timeout=timeout)

    def _release(self, lease_id: str, deadline: float) -> None:
        self._transport.request("DELETE", _lease_path(lease_id), resend=True, deadline=deadline, want=(204,))

    def _release_quietly(self, lease_id: str) -> None:
        try:
            self._release(lease_id, time.monotonic() + 5.0)
        except FencegwError:
            pass

    def _set_value(self, lease_id: str, value: str) -> None:
        self._transport.request("PATCH", _lease_path(lease_id), body=encode({"value": value}), resend=True, want=(204,))

    def _renew_failed(self, failure: RenewFailure) -> None:
        if self._on_renew_failure is not None:
            self._on_renew_failure(failure)

    def _write_headers(self, key: Optional[str], not_after: Optional[datetime.datetime]) -> Dict[str, str]:
        headers = {IDEMPOTENCY_HEADER: idempotency_header(key if key is not None else new_idempotency_key())}
        if not_after is not None:
            headers[NOT_AFTER_HEADER] = not_after_header(not_after)
        return headers


def check_lease_options(ttl: float, wait: float, permits: Optional[int], value: Optional[str], safety_margin: Optional[float]) -> None:
    """Refuses a lease request's options the gateway would refuse, before
    anything is sent."""
    if not isinstance(ttl, (int, float)) or isinstance(ttl, bool) or not 0 < ttl <= MAX_TTL:
        raise ConfigurationError("ttl must be more than 0 and at most %d seconds (sent in whole seconds, rounded up)" % MAX_TTL)
    if not isinstance(wait, (int, float)) or isinstance(wait, bool) or not 0 <= wait <= MAX_WAIT:
        raise ConfigurationError("wait must be 0 to %d seconds" % MAX_WAIT)
    if permits is not None and (not isinstance(permits, int) or isinstance(permits, bool) or not 1 <= permits <= MAX_PERMITS):
        raise ConfigurationError("permits must be 1 to %d" % MAX_PERMITS)
    if value is not None and (not isinstance(value, str) or len(value.encode("utf-8")) > MAX_VALUE):
        raise ConfigurationError("value must be a string of at most %d bytes" % MAX_VALUE)
    if safety_margin is not None and (not isinstance(safety_margin, (int, float)) or isinstance(safety_margin, bool)
                                      or not 0 <= safety_margin < math.ceil(ttl)):
        raise ConfigurationError("safety_margin must be 0 or more and less than the TTL")


def _lease_path(lease_id: str) -> str:
    return "/v1/leases/" + urllib.parse.quote(lease_id, safe="")


def _replayed(answer: Answer) -> bool:
    return answer.headers.get(REPLAYED_HEADER, "").strip().lower() == "true"

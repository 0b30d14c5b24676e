"""The wire forms the API shares: tokens, Idempotency-Key, role tokens,
Fencing-Not-After, JSON bodies."""

from __future__ import annotations

import base64
import datetime
import json
import os
from typing import Any, Mapping, Union

from .errors import ConfigurationError, UnexpectedResponse

TOKEN_HEADER = "Fencing-Token"
IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "idempotent-replayed"
NOT_AFTER_HEADER = "Fencing-Not-After"


def new_idempotency_key() -> str:
    """A new random key of 160 bits, in base32: printable, as the header
    requires."""
    return base64.b32encode(os.urandom(20)).decode("ascii").rstrip("=")


def idempotency_header(key: str) -> str:
    """key as an RFC 8941 string."""
    if not key or len(key) > 255 or any(not (0x20 <= ord(c) <= 0x7E) or c in '"\\' for c in key):
        raise ConfigurationError("an idempotency key is 1 to 255 printable ASCII characters, without quotes or backslashes")
    return '"%s"' % key


def unsigned(token: str) -> str:
    """A token without its signature ("1:42" of "1:42:SIGNATURE"): its
    place in the order, as the gateway shows tokens in answers and
    problems. Only the signed token is a capability."""
    parts = token.split(":", 2)
    return ":".join(parts[:2]) if len(parts) >= 2 else token


def token_field(token: Union[str, Mapping[str, str]]) -> str:
    """The Fencing-Token field: a token, or for an operation with several
    resources an RFC 8941 dictionary of each role's token."""
    if isinstance(token, str):
        return token
    parts = []
    for role in sorted(token):
        parts.append('%s="%s"' % (role, token[role].replace("\\", "\\\\").replace('"', '\\"')))
    return ", ".join(parts)


def not_after_header(when: datetime.datetime) -> str:
    """An aware datetime in RFC 3339, UTC."""
    if not isinstance(when, datetime.datetime) or when.tzinfo is None or when.utcoffset() is None:
        raise ConfigurationError("not_after must be an aware datetime (with a tzinfo)")
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode(body: Any) -> bytes:
    try:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise ConfigurationError("the request does not encode as JSON: %s" % e) from None


def decode_object(body: bytes, what: str) -> dict:
    """A JSON object of a success answer, or UnexpectedResponse."""
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise UnexpectedResponse("%s: the answer does not decode: %s" % (what, e)) from None
    if not isinstance(doc, dict):
        raise UnexpectedResponse("%s: the answer is not a JSON object" % what)
    return doc

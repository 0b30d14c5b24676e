"""Credentials: a bearer token, given or read from a file again whenever
it changes (a rotating JWT), and TLS contexts whose client certificate is
loaded again when its files change."""

from __future__ import annotations

import os
import ssl
import threading
from dataclasses import dataclass
from typing import Optional, Tuple, Union

from .errors import ConfigurationError, CredentialError


@dataclass(frozen=True)
class TLS:
    """The PEM files of a client of an https:// gateway, each optional:
    ``ca_file``, the CAs the gateway's certificate chains to (else the
    system's); ``cert_file`` and ``key_file``, the client's certificate
    for a gateway that asks for one, loaded again when they change."""

    ca_file: Optional[str] = None
    cert_file: Optional[str] = None
    key_file: Optional[str] = None


class Bearer:
    """The Authorization header's credential: a token, or a file's content
    (white space trimmed), read again before each request when the file
    changed. A file missing or empty at start is a ConfigurationError; one
    that goes missing or empty later is a CredentialError of each request
    until it is back."""

    def __init__(self, token: Optional[str], path: Optional[str]) -> None:
        self._token = token
        self._path = path
        self._mu = threading.Lock()
        self._stamp: Optional[Tuple[int, int, int]] = None
        if path is not None:
            try:
                self.current()
            except CredentialError as e:
                raise ConfigurationError(str(e)) from None

    def current(self) -> Optional[str]:
        if self._path is None:
            return self._token
        with self._mu:
            try:
                st = os.stat(self._path)
                stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
                if stamp != self._stamp:
                    with open(self._path, "rb") as f:
                        text = f.read(64 << 10).decode("utf-8", "replace").strip()
                    if not text:
                        raise CredentialError("bearer file %s is empty" % self._path)
                    self._token, self._stamp = text, stamp
            except OSError as e:
                raise CredentialError("bearer file %s cannot be read: %s" % (self._path, e.strerror or e)) from None
            return self._token


class TLSContexts:
    """The SSL context for new connections: made from TLS files (the client
    certificate loaded again when its files change), or given."""

    def __init__(self, tls: Union[TLS, ssl.SSLContext, None]) -> None:
        self._given = tls if isinstance(tls, ssl.SSLContext) else None
        self._files = tls if isinstance(tls, TLS) else None
        self._mu = threading.Lock()
        self._ctx: Optional[ssl.SSLContext] = None
        self._stamp: Tuple[int, ...] = ()
        if self._files is not None:
            f = self._files
            if bool(f.cert_file) != bool(f.key_file):
                raise ConfigurationError("TLS: a client certificate needs its key, and a key its certificate")
            self.context()

    def context(self) -> Optional[ssl.SSLContext]:
        if self._given is not None or self._files is None:
            return self._given
        f = self._files
        with self._mu:
            stamp = tuple(_mtime(p) for p in (f.cert_file, f.key_file) if p)
            if self._ctx is None or stamp != self._stamp:
                try:
                    ctx = ssl.create_default_context(cafile=f.ca_file or None)
                    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
                    if f.cert_file and f.key_file:
                        ctx.load_cert_chain(f.cert_file, f.key_file)
                except (OSError, ssl.SSLError) as e:
                    if self._ctx is None:
                        raise ConfigurationError("TLS files: %s" % e) from None
                    return self._ctx  # a change that does not load keeps the files before
                self._ctx, self._stamp = ctx, stamp
            return self._ctx


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0

"""Server-Sent Events (the WHATWG event-stream format), read incrementally:
fed bytes as they arrive, it gives the messages whose blank line has come.
An event cut off by the end of the stream is never given (the format drops
it), so a watch resumed after it gets it again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from .errors import UnexpectedResponse

# A line of a watch is an event's data (a lock value of at most 4 KiB,
# escaped as JSON) and a few fields.
MAX_LINE = 64 << 10


@dataclass(frozen=True)
class Message:
    id: Optional[str]  # None when the message set none
    event: str
    data: str


class SSEError(UnexpectedResponse):
    """The stream is not an event stream (a line too long)."""


class SSEParser:
    def __init__(self) -> None:
        self._buf = bytearray()
        self._id: Optional[str] = None
        self._event = ""
        self._data: List[str] = []
        self._has_data = False
        self._skip_lf = False

    def feed(self, chunk: bytes) -> List[Message]:
        """The messages chunk completes, in order."""
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]  # the LF of a CRLF split across reads
        if chunk:
            self._skip_lf = False
        self._buf += chunk
        out: List[Message] = []
        start = 0
        buf = self._buf
        n = len(buf)
        i = 0
        while i < n:
            b = buf[i]
            if b == 0x0A or b == 0x0D:
                line = bytes(buf[start:i])
                if b == 0x0D and i + 1 == n:
                    self._skip_lf = True  # a CR at the end: ends the line now
                i += 2 if b == 0x0D and i + 1 < n and buf[i + 1] == 0x0A else 1
                start = i
                m = self._line(line)
                if m is not None:
                    out.append(m)
                continue
            i += 1
        del self._buf[:start]
        if len(self._buf) > MAX_LINE:
            raise SSEError("watch stream: a line of more than %d bytes" % MAX_LINE)
        return out

    def _line(self, raw: bytes) -> Optional[Message]:
        if len(raw) > MAX_LINE:
            raise SSEError("watch stream: a line of more than %d bytes" % MAX_LINE)
        line = raw.decode("utf-8", "replace")
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment: a heartbeat
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "id":
            if "\0" not in value:
                self._id = value
        elif field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
            self._has_data = True
        return None

    def _dispatch(self) -> Optional[Message]:
        m = None
        if self._has_data or self._id is not None:
            m = Message(self._id, self._event, "\n".join(self._data))
        self._id, self._event, self._data, self._has_data = None, "", [], False
        return m

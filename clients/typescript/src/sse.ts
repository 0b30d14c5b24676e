// Server-Sent Events (the WHATWG event-stream format), read incrementally:
// fed bytes as they arrive, it gives the messages whose blank line has come.
// An event cut off by the end of the stream is never given (the format
// drops it), so a watch resumed after it gets it again.

import { UnexpectedResponseError } from "./errors.js";

// A line of a watch is an event's data (a lock value of at most 4 KiB,
// escaped as JSON) and a few fields.
export const MAX_LINE = 64 << 10;

export interface Message {
  /** undefined when the message set none. */
  readonly id: string | undefined;
  readonly event: string;
  readonly data: string;
}

/** The stream is not an event stream (a line too long). */
export class SSEError extends UnexpectedResponseError {}

const decoder = new TextDecoder("utf-8");

export class SSEParser {
  private buf: Buffer = Buffer.alloc(0);
  private id: string | undefined;
  private event = "";
  private data: string[] = [];
  private hasData = false;
  private skipLF = false;

  /** The messages chunk completes, in order. */
  feed(chunk: Uint8Array): Message[] {
    let c = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.skipLF && c.length > 0 && c[0] === 0x0a) {
      c = c.subarray(1); // the LF of a CRLF split across reads
    }
    if (c.length > 0) {
      this.skipLF = false;
    }
    const buf = this.buf.length === 0 ? c : Buffer.concat([this.buf, c]);
    const out: Message[] = [];
    let start = 0;
    let i = 0;
    const n = buf.length;
    while (i < n) {
      const b = buf[i];
      if (b === 0x0a || b === 0x0d) {
        const line = buf.subarray(start, i);
        if (b === 0x0d && i + 1 === n) {
          this.skipLF = true; // a CR at the end: ends the line now
        }
        i += b === 0x0d && i + 1 < n && buf[i + 1] === 0x0a ? 2 : 1;
        start = i;
        const m = this.line(line);
        if (m !== undefined) {
          out.push(m);
        }
        continue;
      }
      i++;
    }
    this.buf = Buffer.from(buf.subarray(start));
    if (this.buf.length > MAX_LINE) {
      throw new SSEError(`watch stream: a line of more than ${MAX_LINE} bytes`);
    }
    return out;
  }

  private line(raw: Uint8Array): Message | undefined {
    if (raw.length > MAX_LINE) {
      throw new SSEError(`watch stream: a line of more than ${MAX_LINE} bytes`);
    }
    const line = decoder.decode(raw);
    if (line === "") {
      return this.dispatch();
    }
    if (line.startsWith(":")) {
      return undefined; // a comment: a heartbeat
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) {
      value = value.slice(1);
    }
    if (field === "id") {
      if (!value.includes("\0")) {
        this.id = value;
      }
    } else if (field === "event") {
      this.event = value;
    } else if (field === "data") {
      this.data.push(value);
      this.hasData = true;
    }
    return undefined;
  }

  private dispatch(): Message | undefined {
    let m: Message | undefined;
    if (this.hasData || this.id !== undefined) {
      m = { id: this.id, event: this.event, data: this.data.join("\n") };
    }
    this.id = undefined;
    this.event = "";
    this.data = [];
    this.hasData = false;
    return m;
  }
}

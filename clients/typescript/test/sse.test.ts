// The event-stream parser: the WHATWG format's lines, fed in pieces.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { MAX_LINE, SSEError, SSEParser, type Message } from "../src/sse.js";
import { Rand } from "./rand.js";

const STREAM = Buffer.from(
  ": heartbeat\n" +
    'event: state\ndata: {"type":"state"}\n\n' +
    'id: 7\nevent: synced\ndata: {"type":"synced"}\n\n' +
    "id: 9\n\n" +
    'id: 12\r\nevent: granted\r\ndata: {"type":\r\ndata: "granted"}\r\n\r\n' +
    'id: 13\revent: released\rdata:{"type":"released"}\r\r' +
    'id: 14\nevent: value\ndata: {"type":"value","holder":{"value":"héllo ✓"}}\n\n',
);

const WANT: Message[] = [
  { id: undefined, event: "state", data: '{"type":"state"}' },
  { id: "7", event: "synced", data: '{"type":"synced"}' },
  { id: "9", event: "", data: "" },
  { id: "12", event: "granted", data: '{"type":\n"granted"}' },
  { id: "13", event: "released", data: '{"type":"released"}' },
  { id: "14", event: "value", data: '{"type":"value","holder":{"value":"héllo ✓"}}' },
];

function parse(chunks: Buffer[]): Message[] {
  const p = new SSEParser();
  return chunks.flatMap((c) => p.feed(c));
}

describe("SSE parser", () => {
  it("reads a whole stream", () => {
    assert.deepEqual(parse([STREAM]), WANT);
  });

  it("reads it split anywhere: a CRLF or a character split across reads included", () => {
    for (let i = 0; i <= STREAM.length; i++) {
      assert.deepEqual(parse([STREAM.subarray(0, i), STREAM.subarray(i)]), WANT, `cut at ${i}`);
    }
  });

  it("reads it byte by byte", () => {
    assert.deepEqual(parse([...STREAM].map((b) => Buffer.from([b]))), WANT);
  });

  it("never gives an event cut off", () => {
    const cut = Buffer.from('id: 1\nevent: granted\ndata: {"type":"granted"}\n\nid: 2\nevent: released\ndata: {"type":"rel');
    assert.deepEqual(parse([cut]), [{ id: "1", event: "granted", data: '{"type":"granted"}' }]);
    assert.equal(parse([Buffer.from("id: 2\nevent: released\ndata: {}\n")]).length, 0);
  });

  it("ignores an id with a NUL", () => {
    assert.deepEqual(parse([Buffer.from("id: 1\x002\ndata: x\n\n")]), [{ id: undefined, event: "", data: "x" }]);
  });

  it("refuses a line too long", () => {
    assert.throws(() => parse([Buffer.from("data: " + "x".repeat(MAX_LINE + 1))]), SSEError);
    assert.throws(() => parse([Buffer.from("data: " + "x".repeat(MAX_LINE) + "\n\n")]), SSEError);
  });

  it("a bounded fuzz: random chunking never changes the messages, random bytes give messages or SSEError", () => {
    const rnd = new Rand(35);
    for (let i = 0; i < 500; i++) {
      const cuts = [...new Set(Array.from({ length: 1 + rnd.int(8) }, () => rnd.int(STREAM.length + 1)))].sort((a, b) => a - b);
      const bounds = [0, ...cuts, STREAM.length];
      const chunks = bounds.slice(1).map((end, k) => STREAM.subarray(bounds[k], end));
      assert.deepEqual(parse(chunks), WANT, `cuts ${cuts}`);
    }
    const alphabet = Buffer.from('id:eventdata \r\n:\x00\xff{}"x', "latin1");
    for (let i = 0; i < 2000; i++) {
      const junk = Buffer.from(Array.from({ length: rnd.int(200) }, () => alphabet[rnd.int(alphabet.length)] as number));
      try {
        for (const m of parse([junk.subarray(0, junk.length >> 1), junk.subarray(junk.length >> 1)])) {
          assert.equal(typeof m.data, "string");
          assert.ok(m.id === undefined || !m.id.includes("\0"));
        }
      } catch (e) {
        assert.ok(e instanceof SSEError, String(e));
      }
    }
  });
});

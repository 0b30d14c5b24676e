// Success answers decode to results, or to UnexpectedResponseError: never a
// half-filled result, never an exception of the decoder's own.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { UnexpectedResponseError } from "../src/errors.js";
import { batchResult, checkResult, lockState, readResult, watchEvent, writeResult } from "../src/results.js";
import { decodeObject } from "../src/wire.js";
import { Rand } from "./rand.js";

const WRITE = {
  operation: "debit",
  resource: "account/acct-1",
  token: "1:7",
  statements: [{ rows_affected: 1, rows: [{ id: "acct-1", balance_cents: 700 }] }, { rows_affected: 1 }],
};
const TRANSFER = { operation: "transfer", fences: [{ role: "from", resource: "account/acct-1", token: "1:7" }], statements: [{ rows_affected: 1 }] };
const READ = { operation: "balance", resource: "account/acct-1", token: "1:7", fence: "1:7", statements: [{ rows_affected: 1, rows: [{ balance_cents: 700 }] }] };
const STATE = {
  resource: "pool/p1",
  revision: 9,
  permits: 2,
  waiting: 1,
  transitions: 3,
  holders: [{ permit: 1, resource: "pool/p1#1", token: "1:4#1", ttl: 8, value: "a", transitions: 2 }],
  waiters: [{ value: "b" }],
};
const EVENT = { type: "granted", resource: "job/w", revision: 6, holder: { token: "1:6", value: "" }, transitions: 1 };
const BATCH = { writes: [WRITE, TRANSFER] };
const CHECK = { fences: [{ role: "", resource: "account/acct-1", token: "1:7", fence: "1:7" }] };

const decoders: ((b: Buffer) => unknown)[] = [
  (b) => writeResult(decodeObject(b, "w"), false, "w"),
  (b) => readResult(decodeObject(b, "r"), "r"),
  (b) => lockState(decodeObject(b, "o"), "o"),
  (b) => watchEvent(decodeObject(b, "e"), "6", "e"),
  (b) => batchResult(decodeObject(b, "b"), false, "b"),
  (b) => checkResult(decodeObject(b, "c"), "c"),
];

describe("results", () => {
  it("decode the gateway's answers", () => {
    const w = writeResult(WRITE, true, "w");
    assert.deepEqual(w.statements[0]?.rows, [{ id: "acct-1", balance_cents: 700 }]);
    assert.equal(w.statements[1]?.rows, null);
    assert.equal(w.replayed, true);
    assert.equal(writeResult(TRANSFER, false, "w").fences[0]?.role, "from");
    assert.equal(readResult(READ, "r").fence, "1:7");
    const st = lockState(STATE, "o");
    assert.deepEqual([st.permits, st.holders[0]?.permit, st.holders[0]?.holder.token, st.waiters[0]?.value], [2, 1, "1:4#1", "b"]);
    assert.equal(st.holder, null);
    const ev = watchEvent(EVENT, "6", "e");
    assert.deepEqual([ev.type, ev.revision, ev.holder?.token], ["granted", 6, "1:6"]);
    assert.equal(batchResult(BATCH, false, "b").writes.length, 2);
    assert.equal(checkResult(CHECK, "c").fences[0]?.fence, "1:7");
  });

  it("refuse answers that are none", () => {
    for (const body of ["", "null", "[]", "{", '{"rows": 1}', '{"statements": "no"}', '{"statements": [1]}', '{"statements": [{"rows_affected": true}]}', '{"statements": [{"rows": [1]}]}', "\xff\xfe"]) {
      assert.throws(() => writeResult(decodeObject(Buffer.from(body, "latin1"), "w"), false, "w"), UnexpectedResponseError, body);
    }
  });

  it("a bounded fuzz: mutations of good answers decode, or throw UnexpectedResponseError; nothing else escapes", () => {
    const rnd = new Rand(35);
    const seeds = [WRITE, TRANSFER, READ, STATE, EVENT, BATCH, CHECK].map((d) => Buffer.from(JSON.stringify(d)));
    const snippets = ["1", "null", "true", "[", "{}", '"x"', "-", "\\u0000", "9".repeat(400), "1e400"];
    for (let i = 0; i < 3000; i++) {
      const body = rnd.mutate(rnd.pick(seeds), snippets);
      for (const decode of decoders) {
        try {
          decode(body);
        } catch (e) {
          assert.ok(e instanceof UnexpectedResponseError, `case ${i}: ${String(e)} of ${body.toString("latin1")}`);
        }
      }
    }
  });
});

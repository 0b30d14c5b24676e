// Answers that are errors decode to the class of their problem type, and
// anything else to a typed error with a clear, bounded message.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import * as fencegw from "../src/index.js";
import { PROBLEM_CLASSES, errorFromAnswer } from "../src/errors.js";
import { Rand, printableText } from "./rand.js";

const PROBLEM = "application/problem+json";
const enc = (s: string | object): Buffer => Buffer.from(typeof s === "string" ? s : JSON.stringify(s));

describe("problem types", () => {
  it("every problem type has its class", () => {
    for (const [kind, cls] of Object.entries(PROBLEM_CLASSES)) {
      const doc = { type: "urn:fencegw:problem:" + kind, title: kind, status: 409, detail: "d", resource: "account/acct-1", current_token: "1:9", presented_token: "1:4" };
      const err = errorFromAnswer(409, PROBLEM, enc(doc));
      assert.equal(err.constructor, cls, kind);
      assert.ok(err instanceof fencegw.ProblemError);
      assert.equal(err.kind, kind);
      assert.deepEqual(err.problem, doc);
      assert.equal(err.resource, "account/acct-1");
      assert.equal(err.status, 409);
      assert.equal(err.name, cls.name);
    }
  });

  it("every problem type of docs/api.md has its class", async () => {
    const { readFileSync } = await import("node:fs");
    const api = readFileSync(new URL("../../../../docs/api.md", import.meta.url), "utf8");
    const table = api.slice(api.indexOf("## Problems"), api.indexOf("## Retries"));
    const kinds = [...table.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1] as string);
    assert.ok(kinds.length >= 25, `only ${kinds.length} problem types read from docs/api.md`);
    for (const kind of kinds) {
      assert.ok(PROBLEM_CLASSES[kind] !== undefined, `no class for ${kind}`);
    }
  });

  it("stale-token names the fence", () => {
    const err = errorFromAnswer(
      409,
      PROBLEM + "; charset=utf-8",
      enc('{"type":"urn:fencegw:problem:stale-token","status":409,"detail":"stale token 1:4 for account/acct-1: the fence is at 1:7","current_token":"1:7","presented_token":"1:4","operation":"debit"}'),
    );
    assert.ok(err instanceof fencegw.StaleTokenError);
    assert.deepEqual([err.currentToken, err.presentedToken, err.operation], ["1:7", "1:4", "debit"]);
    assert.equal(err.message, "409 stale-token: stale token 1:4 for account/acct-1: the fence is at 1:7");
  });

  it("unavailable carries its outcome", () => {
    for (const [outcome, want] of [["not-applied", "not-applied"], ["unknown", "unknown"], [undefined, "unknown"], ["??", "unknown"]]) {
      const doc: Record<string, unknown> = { type: "urn:fencegw:problem:unavailable", status: 503 };
      if (outcome !== undefined) doc["outcome"] = outcome;
      const err = errorFromAnswer(503, PROBLEM, enc(doc));
      assert.ok(err instanceof fencegw.UnavailableError);
      assert.equal(err.outcome, want);
    }
    const halted = errorFromAnswer(503, PROBLEM, enc('{"type":"urn:fencegw:problem:authority-halted","outcome":"unknown"}'));
    assert.ok(halted instanceof fencegw.AuthorityHaltedError);
    assert.ok(halted instanceof fencegw.UnavailableError);
  });

  it("answers that are no problem of a known type", () => {
    const cases: [string, number, string, string, unknown][] = [
      ["a problem without a type", 409, PROBLEM, '{"title":"Conflict","status":409}', fencegw.ProblemError],
      ["a type of another vocabulary", 400, PROBLEM, '{"type":"about:blank"}', fencegw.ProblemError],
      ["a kind from a newer gateway, 503", 503, PROBLEM, '{"type":"urn:fencegw:problem:overloaded"}', fencegw.UnavailableError],
      ["a proxy's HTML 502", 502, "text/html", "<html><h1>502 Bad Gateway</h1></html>", fencegw.UnavailableError],
      ["a load balancer's 504, no type", 504, "", "", fencegw.UnavailableError],
      ["an HTML 404", 404, "text/html", "<html>Not Found</html>", fencegw.UnexpectedResponseError],
      ["a problem that is not JSON", 409, PROBLEM, "{not json", fencegw.UnexpectedResponseError],
      ["a problem cut short", 409, PROBLEM, '{"type":"urn:fencegw:problem:stale-tok', fencegw.UnexpectedResponseError],
      ["a JSON array", 409, PROBLEM, "[1,2]", fencegw.UnexpectedResponseError],
      ["JSON of another type", 409, "application/json", '{"type":"urn:fencegw:problem:stale-token"}', fencegw.UnexpectedResponseError],
    ];
    for (const [name, status, ct, body, cls] of cases) {
      const err = errorFromAnswer(status, ct, enc(body));
      assert.equal(err.constructor, cls, name);
      assert.ok(err.message.includes(String(status)), name);
    }
  });

  it("messages are printable and bounded", () => {
    const err = errorFromAnswer(500, "text/plain", Buffer.concat([enc("line\nbreak\x00\x1b[31m"), Buffer.alloc(100000, "x")]));
    assert.ok(printableText(err.message), err.message);
    assert.ok(err.message.length < 400);
  });
});

describe("random answers", () => {
  it("decode to one typed error with a bounded printable message, a problem's status the answer's", () => {
    const rnd = new Rand(35);
    const seeds = [
      '{"type":"urn:fencegw:problem:stale-token","status":409,"current_token":"1:4"}',
      '{"type":"urn:fencegw:problem:unavailable","outcome":"not-applied"}',
      '{"type":1,"status":"x","detail":["a"],"index":true,"outcome":7}',
      "<html></html>",
      "",
      "null",
      '{"detail":"\\u0000\\n"}',
    ].map((s) => Buffer.from(s));
    const snippets = ["1", "null", '"', "{", "\u0000", "\n"];
    for (let i = 0; i < 3000; i++) {
      const body = rnd.mutate(rnd.pick(seeds), snippets);
      const status = rnd.pick([400, 401, 403, 404, 409, 413, 422, 428, 429, 500, 502, 503, 504, 100 + rnd.int(500)]);
      const ct = rnd.pick([PROBLEM, PROBLEM + "; charset=utf-8", "text/html", "", "application/json", "\x00;;"]);
      const err = errorFromAnswer(status, ct, body);
      assert.ok(err instanceof fencegw.FencegwError, `case ${i}`);
      if (err instanceof fencegw.ProblemError) {
        assert.equal(err.status, status);
        assert.ok(err.index === undefined || Number.isSafeInteger(err.index));
      }
      assert.ok(printableText(err.message), JSON.stringify(err.message));
      assert.ok(err.message.length < 1024);
    }
  });
});

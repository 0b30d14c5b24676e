// Connections kept and reused, replicas failed over, and the retry rules:
// sent again under its key only while the answer is lost, never after a
// final answer, never told "not applied" of a write that may have been.

import assert from "node:assert/strict";
import { after, describe, it } from "node:test";

import * as fencegw from "../src/index.js";
import { deadURL, problem, scripted, serve, written, type FakeGateway, type Reply, type Route } from "./fakegw.js";

const UNAVAILABLE_NOT_APPLIED = problem("unavailable", 503, { outcome: "not-applied" });
const UNAVAILABLE_UNKNOWN = problem("unavailable", 503, { outcome: "unknown" });
const PAGE_502: Reply = { status: 502, body: "<html><body><h1>502 Bad Gateway</h1></body></html>", contentType: "text/html" };

const fakes: FakeGateway[] = [];
const gateways: fencegw.Gateway[] = [];
after(async () => {
  gateways.forEach((g) => g.close());
  await Promise.all(fakes.map((f) => f.stop()));
});

async function fake(route: Route): Promise<FakeGateway> {
  const f = await serve(route);
  fakes.push(f);
  return f;
}

function client(...urls: string[]): fencegw.Gateway {
  const gw = new fencegw.Gateway(urls, { timeout: 5000 });
  gateways.push(gw);
  return gw;
}

const write = (gw: fencegw.Gateway): Promise<fencegw.WriteResult> => gw.write("debit", {}, { token: "1:1" });

describe("transport", () => {
  it("reuses connections, one per request at a time", async () => {
    const f = await fake(() => written());
    const gw = client(f.url);
    for (let i = 0; i < 20; i++) {
      await write(gw);
    }
    assert.equal(f.connections, 1);
    // Sixteen at once: each takes a connection of its own and gives it
    // back, and none is closed for want of room among the idle ones.
    await Promise.all(Array.from({ length: 16 }, async () => {
      for (let i = 0; i < 20; i++) await write(gw);
    }));
    assert.equal(f.requests.length, 20 + 16 * 20);
    assert.ok(f.connections <= 1 + 16, `${f.connections} connections`);
  });

  it("replaces a connection the server closed", async () => {
    const f = await fake(() => ({ body: { statements: [] }, headers: { connection: "close" } }));
    const gw = client(f.url);
    for (let i = 0; i < 3; i++) await write(gw);
    assert.equal(f.requests.length, 3);
  });

  it("fails over to the next replica, which is asked first from then on", async () => {
    const f = await fake(() => written());
    const gw = client(await deadURL(), f.url);
    const attempts: string[] = [];
    gw.onAttempt = (replica) => attempts.push(replica);
    for (let i = 0; i < 3; i++) await write(gw);
    assert.equal(f.requests.length, 3);
    assert.equal(attempts.length, 4, "the replica that is down was asked more than once");
  });

  it("says when no replica could be reached: not applied", async () => {
    const gw = client(await deadURL(), await deadURL());
    await assert.rejects(write(gw), (e: unknown) => {
      assert.ok(e instanceof fencegw.GatewayUnreachableError);
      assert.equal(e.outcome, "not-applied");
      assert.match(e.message, /no replica of 2/);
      return true;
    });
  });

  it("sends a write again under its key while its answer is lost", async () => {
    const lost: [string, Reply][] = [
      ["503 not-applied", UNAVAILABLE_NOT_APPLIED],
      ["503 unknown", UNAVAILABLE_UNKNOWN],
      ["a proxy's 502 page", PAGE_502],
      ["a connection closed unanswered", { close: true }],
      ["an answer cut short", { raw: 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"statements": [' }],
      ["a status line cut short", { raw: "HTTP/1.1 20" }],
    ];
    for (const [name, first] of lost) {
      const f = await fake(scripted(first, written()));
      const res = await write(client(f.url));
      assert.equal(f.requests.length, 2, name);
      assert.equal(new Set(f.requests.map((r) => r.headers["idempotency-key"])).size, 1, `${name}: the retry carried another key`);
      assert.deepEqual(res.statements[0]?.rows, [{ id: "acct-1", balance_cents: 900 }], name);
    }
  });

  it("never sends a final answer's request again", async () => {
    const finals: [string, Reply, unknown][] = [
      ["stale token", problem("stale-token", 409, { current_token: "1:9" }), fencegw.StaleTokenError],
      ["halted authority", problem("authority-halted", 503, { outcome: "unknown" }), fencegw.AuthorityHaltedError],
      ["an HTML 404", { status: 404, body: "<html>nope</html>", contentType: "text/html" }, fencegw.UnexpectedResponseError],
      ["a 200 that does not decode", { body: "{not json" }, fencegw.UnexpectedResponseError],
      ["a 200 that is no result", { body: { rows: 1 } }, fencegw.UnexpectedResponseError],
      ["a 200 of the wrong shapes", { body: { statements: [{ rows_affected: "1" }] } }, fencegw.UnexpectedResponseError],
    ];
    for (const [name, reply, cls] of finals) {
      const f = await fake(() => reply);
      await assert.rejects(write(client(f.url)), (e: unknown) => (e as object).constructor === cls, name);
      assert.equal(f.requests.length, 1, name);
    }
  });

  it("never says not applied after an attempt that may have applied", async () => {
    let f = await fake(scripted(PAGE_502, UNAVAILABLE_NOT_APPLIED));
    await assert.rejects(write(client(f.url)), (e: unknown) => e instanceof fencegw.UnavailableError && e.outcome === "unknown");
    assert.equal(f.requests.length, 4);
    f = await fake(() => UNAVAILABLE_NOT_APPLIED);
    await assert.rejects(write(client(f.url)), (e: unknown) => e instanceof fencegw.UnavailableError && e.outcome === "not-applied");
  });

  it("bounds the answers it reads", async () => {
    const f = await fake(() => ({ status: 409, body: "{" + " ".repeat(70 << 10) + "}", contentType: "application/problem+json" }));
    await assert.rejects(write(client(f.url)), fencegw.UnexpectedResponseError);
  });

  it("gives up a request at its timeout, and sends it again under its key", async () => {
    const never = new Promise(() => {});
    const f = await fake(scripted({ hold: never }, written()));
    const gw = new fencegw.Gateway(f.url, { timeout: 2000 });
    gateways.push(gw);
    const res = await write(gw);
    assert.equal(f.requests.length, 2);
    assert.equal(f.requests[0]?.headers["idempotency-key"], f.requests[1]?.headers["idempotency-key"]);
    assert.equal(res.replayed, false);
  });
});

// Options the gateway would refuse are refused before anything is sent; the
// bearer file is read again when it changes, and its loss is a typed error.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";

import * as fencegw from "../src/index.js";
import { leaseRoutes, renewed, serve, written, type FakeGateway } from "./fakegw.js";

const fakes: FakeGateway[] = [];
after(async () => {
  await Promise.all(fakes.map((f) => f.stop()));
});

describe("options", () => {
  it("refuses a lease's options out of range, sending nothing", async () => {
    const f = await serve(leaseRoutes(renewed()));
    fakes.push(f);
    const gw = new fencegw.Gateway(f.url);
    const bad: fencegw.LockOptions[] = [
      { ttl: 0 },
      { ttl: 30 }, // seconds, taken for milliseconds: refused, not a 1 s lease
      { ttl: 3_600_001 },
      { ttl: Number.NaN },
      { wait: -1 },
      { wait: 300_001 },
      { permits: 0 },
      { permits: 1.5 },
      { permits: 1001 },
      { value: "x".repeat(4097) },
      { ttl: 2000, safetyMargin: 2000 },
      { safetyMargin: -1 },
    ];
    for (const o of bad) {
      await assert.rejects(gw.acquire("account/acct-1", o), fencegw.ConfigurationError, JSON.stringify(o));
      await assert.rejects(gw.withLock("account/acct-1", o, async () => {}), fencegw.ConfigurationError);
    }
    await assert.rejects(gw.acquireAll([]), fencegw.ConfigurationError);
    await assert.rejects(gw.acquireAll(["a", "a"]), fencegw.ConfigurationError);
    assert.equal(f.requests.length, 0);
  });

  it("takes options in range", async () => {
    const f = await serve(leaseRoutes(renewed()));
    fakes.push(f);
    const gw = new fencegw.Gateway(f.url);
    for (const o of [{ ttl: 1000 }, { ttl: 3_600_000, wait: 300_000 }, { permits: 1000, value: "x".repeat(4096) }]) {
      const lease = await gw.acquire("account/acct-1", o);
      await lease.release();
    }
    const body = f.requests.find((r) => r.method === "POST")?.json();
    assert.deepEqual(body, { resource: "account/acct-1", ttl: 1, wait: 0 });
  });

  it("refuses write options the gateway would", async () => {
    const gw = new fencegw.Gateway("http://127.0.0.1:1");
    await assert.rejects(gw.write("debit", {}, { token: "1:1", notAfter: new Date("not a date") }), fencegw.ConfigurationError);
    await assert.rejects(gw.write("debit", {}, { token: "1:1", idempotencyKey: 'with "quotes"' }), fencegw.ConfigurationError);
    await assert.rejects(gw.write("debit", { n: Number.POSITIVE_INFINITY }, { token: "1:1" }), fencegw.ConfigurationError);
    await assert.rejects(gw.write("debit", { n: 2n ** 64n }, { token: "1:1" }), fencegw.ConfigurationError);
  });

  it("sends notAfter in UTC", async () => {
    const f = await serve(() => written());
    fakes.push(f);
    await new fencegw.Gateway(f.url).write("debit", {}, { token: "1:1", notAfter: new Date(Date.UTC(2030, 0, 2, 3, 4, 5, 6)) });
    assert.equal(f.requests[0]?.headers["fencing-not-after"], "2030-01-02T03:04:05.006Z");
  });

  it("refuses no replica and malformed URLs", () => {
    assert.throws(() => new fencegw.Gateway([]), fencegw.ConfigurationError);
    for (const url of ["", "gw:8080", "ftp://gw", "http://", "http://gw/?q=1", "http://gw/#f"]) {
      assert.throws(() => new fencegw.Gateway(url), fencegw.ConfigurationError, url);
    }
    assert.throws(() => new fencegw.Gateway("http://user:secret@gw:99999/"), (e: Error) => !e.message.includes("secret"));
    assert.throws(() => new fencegw.Gateway("http://gw", { timeout: 0 }), fencegw.ConfigurationError);
    assert.throws(() => new fencegw.Gateway("https://gw", { tls: { certFile: "a.pem" } }), fencegw.ConfigurationError);
    assert.throws(() => new fencegw.Gateway("https://gw", { tls: { caFile: "/nonexistent/ca.pem" } }), fencegw.ConfigurationError);
  });
});

describe("bearer file", () => {
  const dir = mkdtempSync(join(tmpdir(), "fencegw-bearer-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("is refused when missing or empty at start", () => {
    assert.throws(() => new fencegw.Gateway("http://gw", { bearerFile: join(dir, "none") }), fencegw.ConfigurationError);
    writeFileSync(join(dir, "empty"), " \n");
    assert.throws(() => new fencegw.Gateway("http://gw", { bearerFile: join(dir, "empty") }), fencegw.ConfigurationError);
  });

  it("is read again when it changes, and its loss is a CredentialError, nothing sent", async () => {
    const f = await serve(() => written());
    fakes.push(f);
    const file = join(dir, "token");
    writeFileSync(file, "first\n");
    const gw = new fencegw.Gateway(f.url, { bearerFile: file });
    await gw.write("debit", {}, { token: "1:1" });
    writeFileSync(file, "second-and-longer\n");
    await gw.write("debit", {}, { token: "1:1" });
    assert.deepEqual(f.requests.map((r) => r.headers["authorization"]), ["Bearer first", "Bearer second-and-longer"]);
    rmSync(file);
    await assert.rejects(gw.write("debit", {}, { token: "1:1" }), fencegw.CredentialError);
    assert.equal(f.requests.length, 2);
    writeFileSync(file, "third\n");
    await gw.write("debit", {}, { token: "1:1" });
    assert.equal(f.requests[2]?.headers["authorization"], "Bearer third");
    gw.close();
  });
});

// The lease's life against answers a test scripts: renewed, lost, expired,
// released, used after its block; and the timers it leaves (none).

import assert from "node:assert/strict";
import { after, afterEach, describe, it } from "node:test";

import * as fencegw from "../src/index.js";
import { aborted, gate, grant, kindOf, leaseRoutes, problem, renewed, serve, until, type FakeGateway, type Reply, type Route } from "./fakegw.js";

const GONE = problem("lease-not-found", 404, { detail: "keep lease alive: tokens: lease not found" });
const PAGE_503: Reply = { status: 503, body: "<html>503</html>", contentType: "text/html" };

const fakes: FakeGateway[] = [];
after(async () => {
  await Promise.all(fakes.map((f) => f.stop()));
});

async function fake(route: Route): Promise<FakeGateway> {
  const f = await serve(route);
  fakes.push(f);
  return f;
}

function client(f: FakeGateway, o: fencegw.GatewayOptions = {}): fencegw.Gateway {
  return new fencegw.Gateway(f.url, { timeout: 5000, ...o });
}

// No lease leaves a timer behind: once it is released or lost, nothing of
// it keeps the process alive.
afterEach(async () => {
  await until(() => !process.getActiveResourcesInfo().includes("Timeout"));
});

describe("lease", () => {
  it("is refused once its block ended, sending nothing", async () => {
    const f = await fake(leaseRoutes(renewed()));
    const gw = client(f);
    let held: fencegw.Lease | undefined;
    await gw.withLock("account/acct-1", async (lease, signal) => {
      held = lease;
      await lease.write("debit", { account: "acct-1", amount_cents: 1 });
      assert.equal(signal, lease.signal);
    });
    const lease = held as fencegw.Lease;
    assert.equal(lease.signal.aborted, false, "a release is no loss");
    for (const call of [() => lease.write("debit", {}), () => lease.check(), () => lease.read("balance", {}), () => lease.setValue("v")]) {
      await assert.rejects(call(), fencegw.LeaseReleasedError);
    }
    assert.equal(f.count("POST", "/v1/ops/"), 1);
    assert.equal(f.count("DELETE", "/v1/leases/"), 1);
    await lease.release(); // again: nothing sent
    assert.equal(f.count("DELETE", "/v1/leases/"), 1);
  });

  it("is lost at once when its keepalive is refused, and never taken again", async () => {
    const f = await fake(leaseRoutes(() => GONE, 1));
    const gw = client(f);
    await gw.withLock("account/acct-1", { ttl: 1000 }, async (lease, signal) => {
      await aborted(signal);
      assert.ok(signal.reason instanceof fencegw.LeaseLostError);
      await assert.rejects(lease.write("debit", {}), (e: unknown) => {
        assert.ok(e instanceof fencegw.LeaseLostError && !(e instanceof fencegw.LeaseExpiredError));
        assert.ok(e.cause instanceof fencegw.LeaseNotFoundError);
        return true;
      });
    });
    assert.equal(f.requests.filter((r) => kindOf(r) === "keepalive").length, 1, "keepalives after the lease was gone");
    assert.equal(f.count("POST", "/v1/ops/"), 0);
    assert.equal(f.count("DELETE", "/v1/leases/"), 0, "released a lease the gateway said was gone");
    assert.equal(f.requests.filter((r) => kindOf(r) === "acquire").length, 1, "the lock was taken again");
  });

  it("throws a loss the block never heard of on leaving it, never over the block's own error", async () => {
    const f = await fake(leaseRoutes(() => GONE, 1));
    const gw = client(f);
    await assert.rejects(
      gw.withLock("account/acct-1", { ttl: 1000 }, async (_lease, signal) => aborted(signal)),
      fencegw.LeaseLostError,
    );
    await assert.rejects(
      gw.withLock("account/acct-1", { ttl: 1000 }, async (_lease, signal) => {
        await aborted(signal);
        throw new RangeError("the block's");
      }),
      RangeError,
    );
  });

  it("expires while the gateway does not answer its keepalives", async () => {
    const failures: fencegw.RenewFailure[] = [];
    const f = await fake(leaseRoutes(() => PAGE_503, 3));
    const gw = client(f, { onRenewFailure: (x) => failures.push(x) });
    await gw.withLock("account/acct-1", { ttl: 3000 }, async (lease, signal) => {
      await aborted(signal);
      assert.ok(lease.error instanceof fencegw.LeaseExpiredError);
      await assert.rejects(lease.write("debit", {}), fencegw.LeaseExpiredError);
    });
    assert.equal(f.count("POST", "/v1/ops/"), 0);
    assert.ok(failures.length >= 2, "keepalives were not retried");
    assert.ok(failures.every((x) => x.error instanceof fencegw.UnavailableError));
    assert.equal(f.count("DELETE", "/v1/leases/"), 1, "the gateway may still hold it: released");
  });

  it("signals its expiry at the deadline while a keepalive hangs", async () => {
    const never = gate();
    const f = await fake(leaseRoutes(() => ({ hold: never.promise }), 1));
    const gw = client(f);
    const lease = await gw.acquire("account/acct-1", { ttl: 1000 });
    await aborted(lease.signal);
    assert.ok(lease.signal.reason instanceof fencegw.LeaseExpiredError);
    assert.ok(performance.now() >= lease.deadline);
    never.open();
    await lease.release(200);
  });

  it("releases within its bound whatever the gateway does", { timeout: 30_000 }, async () => {
    const hold = gate();
    const f = await fake(leaseRoutes(renewed(), 10, { release: () => ({ status: 204, body: "", hold: hold.promise }) }));
    const gw = client(f);
    const lease = await gw.acquire("account/acct-1");
    // The gateway answers only once release has returned: a release that
    // waited for it would never return, and the test would time out.
    await lease.release(300);
    assert.ok(lease.error instanceof fencegw.LeaseReleasedError);
    hold.open();
  });

  it("says a lease gone when released was lost unnoticed", async () => {
    const f = await fake(leaseRoutes(renewed(), 10, { release: () => GONE }));
    await assert.rejects(client(f).withLock("account/acct-1", async () => {}), fencegw.LeaseLostError);
  });

  it("takes its token signed again, and only its own", async () => {
    const tokens = ["1:7:QkJDREVGR0hJSktMTU5PUA", "1:8:Q0JDREVGR0hJSktMTU5PUA"];
    const f = await fake(leaseRoutes(() => ({ body: { lease_id: "1a2b", ttl: 1, token: tokens.shift() ?? "1:8:Q0JDREVGR0hJSktMTU5PUA" } }), 1));
    await client(f).withLock("account/acct-1", { ttl: 1000 }, async (lease) => {
      await until(() => tokens.length === 0 && f.requests.filter((r) => kindOf(r) === "keepalive").length >= 3);
      // 1:7 signed again is adopted; 1:8 is another place: not this lease's.
      assert.equal(lease.token, "1:7:QkJDREVGR0hJSktMTU5PUA");
    });
  });

  it("refuses a grant without its fields, and releases it", async () => {
    const f = await fake(leaseRoutes(renewed(), 10, { acquire: () => ({ status: 201, body: { lease_id: "1a2b", ttl: 10 } }) }));
    await assert.rejects(client(f).acquire("account/acct-1"), fencegw.UnexpectedResponseError);
    assert.equal(f.count("DELETE", "/v1/leases/1a2b"), 1, "the lease granted was left to expire");
  });

  it("renews a grant that came after its TTL before counting its deadline", async () => {
    // The grant comes 1.5 s after the request of a 1 s lease (a long wait):
    // counted from the request it is over, but the gateway renewed it.
    const late = (): Reply => ({ ...grant({ ttl: 1 }), hold: new Promise((r) => setTimeout(r, 1500)) });
    let f = await fake(leaseRoutes(renewed(1), 1, { acquire: late }));
    const lease = await client(f).acquire("account/acct-1", { ttl: 1000, wait: 10_000 });
    assert.equal(lease.error, undefined);
    assert.equal(f.requests.filter((r) => kindOf(r) === "keepalive").length >= 1, true, "not renewed before use");
    await lease.write("debit", {});
    await lease.release();

    f = await fake(leaseRoutes(() => GONE, 1, { acquire: late }));
    await assert.rejects(client(f).acquire("account/acct-1", { ttl: 1000, wait: 10_000 }), fencegw.LeaseLostError);
    assert.equal(f.count("DELETE", "/v1/leases/"), 0, "released a lease the gateway said was gone");

    f = await fake(leaseRoutes(() => PAGE_503, 1, { acquire: late }));
    const c = new fencegw.Gateway(f.url, { timeout: 5000 });
    await assert.rejects(c.acquire("account/acct-1", { ttl: 1000, wait: 10_000 }), fencegw.LeaseExpiredError);
    assert.equal(f.count("DELETE", "/v1/leases/"), 1, "the lease whose renewal was lost was kept");
  });

  it("asks for a lost grant again under its key", async () => {
    const answers: Reply[] = [{ close: true }, grant()];
    const f = await fake(leaseRoutes(renewed(), 10, { acquire: () => answers.shift() as Reply }));
    const lease = await client(f).acquire("account/acct-1");
    await lease.release();
    const keys = f.requests.filter((r) => kindOf(r) === "acquire").map((r) => r.headers["idempotency-key"]);
    assert.equal(keys.length, 2);
    assert.equal(keys[0], keys[1]);
  });

  it("takes several resources in canonical order, all or none", async () => {
    const f = await fake(
      leaseRoutes(renewed(), 10, {
        acquire: (req) => {
          const resource = req.json()["resource"] as string;
          return resource === "account/acct-2" ? problem("locked", 409, { resource, current_token: "1:3" }) : grant({ leaseId: "a1", resource });
        },
      }),
    );
    await assert.rejects(
      client(f).withLock(["account/acct-2", "account/acct-1"], async () => assert.fail("entered a block without every lease")),
      (e: unknown) => e instanceof fencegw.LockedError && e.holder === "1:3",
    );
    const asked = f.requests.filter((r) => kindOf(r) === "acquire").map((r) => r.json()["resource"]);
    assert.deepEqual(asked, ["account/acct-1", "account/acct-2"], "not in canonical order");
    assert.equal(f.count("DELETE", "/v1/leases/a1"), 1, "the lease taken was kept");
  });

  it("signals a set's loss when any of its leases is lost", async () => {
    const f = await fake(leaseRoutes((req) => (req.path.includes("/b2/") ? GONE : { body: { lease_id: "a1", ttl: 1 } }), 1, {
      acquire: (req) => grant({ leaseId: req.json()["resource"] === "account/acct-1" ? "a1" : "b2", resource: req.json()["resource"] as string, ttl: 1 }),
    }));
    await client(f).withLock(["account/acct-1", "account/acct-2"], { ttl: 1000 }, async (set, signal) => {
      await aborted(signal);
      assert.ok(set.error instanceof fencegw.LeaseLostError);
      await assert.rejects(set.write("transfer", {}, { roles: { from: "account/acct-1", to: "account/acct-2" } }), fencegw.LeaseLostError);
    });
    assert.equal(f.count("POST", "/v1/ops/"), 0);
  });

  it("releases with await using", async () => {
    const f = await fake(leaseRoutes(renewed()));
    const gw = client(f);
    {
      const lease = await gw.acquire("account/acct-1");
      try {
        await lease.write("debit", {});
      } finally {
        await lease[Symbol.asyncDispose]();
      }
    }
    assert.equal(f.count("DELETE", "/v1/leases/"), 1);
  });

  it("gives up an acquisition when its signal aborts", async () => {
    const hold = gate();
    const f = await fake(leaseRoutes(renewed(), 10, { acquire: () => ({ ...grant(), hold: hold.promise }) }));
    const ctl = new AbortController();
    const p = client(f).acquire("account/acct-1", { signal: ctl.signal, wait: 10_000 });
    await until(() => f.requests.length === 1);
    ctl.abort(new Error("the caller's"));
    await assert.rejects(p, /the caller's/);
    hold.open();
  });
});

// The TypeScript client's conformance runner: runs the scenarios of
// clients/conformance/scenarios.json with package fencegw, speaking the
// runner protocol of clients/conformance/README.md on stdin and stdout.
//
//     node build/conformance/runner.js SCENARIOS.json

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

import * as fencegw from "../src/index.js";
import { Gateway, unsigned, type GatewayOptions, type Lease } from "../src/index.js";

type Obj = Record<string, unknown>;

// The protocol's names of the client's errors (README.md, "Names of
// outcomes"), by the error's own class: a client without a class of its
// own for a problem type names it "problem", and fails.
const NAMES = new Map<unknown, string>([
  [fencegw.BadRequestError, "bad-request"],
  [fencegw.UnauthorizedError, "unauthorized"],
  [fencegw.TokenRejectedError, "token-rejected"],
  [fencegw.TokenRetiredError, "token-retired"],
  [fencegw.ForbiddenError, "forbidden"],
  [fencegw.UnknownOperationError, "unknown-operation"],
  [fencegw.LeaseNotFoundError, "lease-not-found"],
  [fencegw.NotFoundError, "not-found"],
  [fencegw.NoLockError, "no-lock"],
  [fencegw.MethodNotAllowedError, "method-not-allowed"],
  [fencegw.StaleTokenError, "stale-token"],
  [fencegw.DeadlinePassedError, "deadline-passed"],
  [fencegw.PreconditionFailedError, "precondition-failed"],
  [fencegw.ConstraintError, "constraint"],
  [fencegw.LockedError, "locked"],
  [fencegw.TooLargeError, "too-large"],
  [fencegw.UnsupportedMediaTypeError, "unsupported-media-type"],
  [fencegw.UnsupportedEncodingError, "unsupported-encoding"],
  [fencegw.IdempotencyMismatchError, "idempotency-mismatch"],
  [fencegw.TokenRequiredError, "token-required"],
  [fencegw.TooManyLeasesError, "too-many-leases"],
  [fencegw.InternalError, "internal"],
  [fencegw.ApplicationError, "application"],
  [fencegw.UnavailableError, "unavailable"],
  [fencegw.AuthorityHaltedError, "authority-halted"],
  [fencegw.GatewayUnreachableError, "unreachable"],
  [fencegw.ProblemError, "problem"],
  [fencegw.LeaseLostError, "lease-lost"],
  [fencegw.LeaseExpiredError, "lease-expired"],
  [fencegw.LeaseReleasedError, "lease-released"],
  [fencegw.UnexpectedResponseError, "unexpected-response"],
  [fencegw.ConfigurationError, "bad-options"],
]);

function name(err: unknown): string {
  if (err === undefined) {
    return "ok";
  }
  return (err !== null && typeof err === "object" && NAMES.get(err.constructor)) || "other";
}

/** The name of what calling f came to. */
async function outcome(f: () => Promise<unknown>): Promise<string> {
  try {
    await f();
  } catch (e) {
    if (e instanceof fencegw.FencegwError) {
      return name(e);
    }
    throw e;
  }
  return "ok";
}

// stdin's lines, one at a time; its end ends the runner.
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();

async function readLine(): Promise<string> {
  const r = await lines.next();
  if (r.done) {
    process.exit(0);
  }
  return r.value;
}

function emit(obj: Obj): void {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

interface GatewaySpec {
  urls: string[];
  ca_file?: string;
  cert_file?: string;
  key_file?: string;
  bearer?: string;
  bearer_file?: string;
}

function gateway(spec: GatewaySpec, bearerFile = ""): Gateway {
  const o: GatewayOptions = {};
  if (spec.ca_file || spec.cert_file) {
    o.tls = {
      ...(spec.ca_file ? { caFile: spec.ca_file } : {}),
      ...(!bearerFile && spec.cert_file ? { certFile: spec.cert_file, keyFile: spec.key_file ?? "" } : {}),
    };
  }
  if (spec.bearer) {
    o.bearer = spec.bearer;
  }
  if (bearerFile || spec.bearer_file) {
    o.bearerFile = bearerFile || spec.bearer_file || "";
  }
  return new Gateway(spec.urls, o);
}

/** One scenario under way. */
class Run {
  readonly p: Obj;
  readonly spec: GatewaySpec;
  readonly vars: Obj;
  readonly observe: Obj = {};
  readonly gw: Gateway;

  constructor(
    readonly sc: Obj,
    setup: Obj,
  ) {
    this.p = (sc["params"] as Obj | undefined) ?? {};
    this.spec = setup["gateway"] as GatewaySpec;
    this.vars = (setup["vars"] as Obj | undefined) ?? {};
    this.gw = gateway(this.spec);
  }

  async ready(step: string, data: Obj = {}): Promise<Obj> {
    emit({ event: "ready", scenario: this.sc["id"], step, data });
    const answer = JSON.parse(await readLine()) as Obj;
    return (answer["data"] as Obj | undefined) ?? {};
  }

  s(key: string): string {
    return this.p[key] as string;
  }

  n(key: string): number {
    return this.p[key] as number;
  }

  /** A TTL or wait of the scenario's, given in seconds, in ms. */
  ms(key: string): number {
    return (this.p[key] as number) * 1000;
  }

  debit(cents: number): Obj {
    return { account: this.p["account"], amount_cents: cents };
  }
}

/** Waits up to ms for signal to abort: did it? */
function aborted(signal: AbortSignal, ms: number): Promise<boolean> {
  if (signal.aborted) {
    return Promise.resolve(true);
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(signal.aborted), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const SCENARIOS: Record<string, (r: Run) => Promise<void>> = {};

// The lease loop.

SCENARIOS["acquire-release"] = async (r) => {
  let first = "";
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
    r.observe["write"] = await outcome(() => lease.write("debit", r.debit(r.n("amount_cents"))));
    first = unsigned(lease.token);
  });
  try {
    await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (again) => {
      r.observe["reacquire"] = "ok";
      r.observe["tokens"] = [first, unsigned(again.token)];
    });
  } catch (e) {
    r.observe["reacquire"] = name(e);
  }
};

SCENARIOS["acquire-answer-lost"] = async (r) => {
  try {
    await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
      r.observe["acquire"] = "ok";
      await r.ready("holding", { token: unsigned(lease.token) });
    });
  } catch (e) {
    r.observe["acquire"] = name(e);
  }
};

SCENARIOS["fifo"] = async (r) => {
  const order: number[] = [];
  const waiter = async (i: number): Promise<void> => {
    const lease = await r.gw.acquire(r.s("resource"), { ttl: r.ms("ttl"), wait: r.ms("wait") });
    order.push(i);
    await lease.release();
  };
  const waiters: Promise<void>[] = [];
  for (let i = 1; i <= r.n("waiters"); i++) {
    const w = waiter(i);
    w.catch(() => {}); // awaited below
    waiters.push(w);
    await r.ready(`waiter-${i}`);
  }
  const results = await Promise.allSettled(waiters);
  r.observe["order"] = order;
  for (const res of results) {
    if (res.status === "rejected") {
      throw res.reason;
    }
  }
};

SCENARIOS["gc-pause"] = async (r) => {
  const args = r.debit(r.n("amount_cents"));
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease, signal) => {
    r.observe["first_write"] = await outcome(() => lease.write("debit", args));
    // The write prepared before the pause, past every local check.
    const token = lease.token;
    await r.ready("paused", { token: unsigned(token) });
    try {
      await r.gw.write("debit", args, { token });
      r.observe["stale_write"] = "ok";
    } catch (e) {
      r.observe["stale_write"] = name(e);
      if (e instanceof fencegw.StaleTokenError) {
        r.observe["current_token"] = e.currentToken;
      }
    }
    r.observe["lost"] = await aborted(signal, 30_000);
    r.observe["write_in_block"] = await outcome(() => lease.write("debit", args));
  });
};

SCENARIOS["keepalive-refused"] = async (r) => {
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease, signal) => {
    await r.ready("holding", { lease_id: lease.id });
    const lost = await aborted(signal, 30_000);
    r.observe["before_deadline"] = lost && performance.now() < lease.deadline;
    r.observe["lost"] = lost;
    r.observe["reason"] = name(lease.error);
    r.observe["write_in_block"] = await outcome(() => lease.write("debit", r.debit(1)));
  });
};

SCENARIOS["slow-grant"] = async (r) => {
  const before = performance.now();
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl"), safetyMargin: r.ms("safety_margin") }, async (lease, signal) => {
    r.observe["deadline_span"] = (lease.deadline - before) / 1000;
    await aborted(signal, 30_000);
    r.observe["reason"] = name(lease.error);
    r.observe["write_in_block"] = await outcome(() => lease.write("debit", r.debit(1)));
  });
};

SCENARIOS["replica-killed"] = async (r) => {
  const args = r.debit(r.n("amount_cents"));
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
    await lease.write("debit", args);
    await r.ready("holding");
    const writes: string[] = [];
    for (let i = 0; i < r.n("writes"); i++) {
      writes.push(await outcome(() => lease.write("debit", args)));
    }
    let renewed = 0;
    let last = lease.deadline;
    const end = performance.now() + 30_000;
    while (renewed < r.n("renewals") && performance.now() < end && lease.error === undefined) {
      if (lease.deadline !== last) {
        renewed++;
        last = lease.deadline;
      }
      await pause(20);
    }
    writes.push(await outcome(() => lease.write("debit", args)));
    r.observe["writes"] = writes;
    r.observe["renewed"] = renewed;
    r.observe["lost"] = lease.error !== undefined;
  });
};

SCENARIOS["semaphore"] = async (r) => {
  const opts = { ttl: r.ms("ttl"), permits: r.n("permits") };
  const work = { pool: r.p["pool"] };
  await r.gw.withLock(r.s("resource"), opts, async (a) => {
    await r.gw.withLock(r.s("resource"), opts, async (b) => {
      r.observe["permits"] = [a.permit, b.permit].sort((x, y) => x - y);
      r.observe["third"] = await outcome(() => r.gw.withLock(r.s("resource"), opts, async () => {}));
      const writes: string[] = [];
      for (const lease of [a, b]) {
        writes.push(await outcome(() => lease.write("work", work)));
      }
      r.observe["writes"] = writes;
      const freed = a.permit;
      await a.release();
      try {
        await r.gw.withLock(r.s("resource"), opts, async (c) => {
          r.observe["after_release"] = "ok";
          r.observe["reused_permit"] = c.permit === freed;
        });
      } catch (e) {
        r.observe["after_release"] = name(e);
      }
    });
  });
};

SCENARIOS["multi-lock"] = async (r) => {
  const resources = r.p["resources"] as string[];
  r.observe["refused"] = await outcome(() => r.gw.withLock([r.s("held"), resources[0] as string], { ttl: r.ms("ttl") }, async () => {}));
  await r.ready("refused");
  await r.gw.withLock(resources, { ttl: r.ms("ttl") }, async (leases) => {
    const roles = { from: "account/" + r.s("from"), to: "account/" + r.s("to") };
    const args = { from: r.p["from"], to: r.p["to"], amount_cents: r.p["amount_cents"] };
    r.observe["transfer"] = await outcome(() => leases.write("transfer", args, { roles }));
  });
};

// Writes.

async function writeOnce(r: Run, withReplayed: boolean): Promise<void> {
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
    await r.ready("holding");
    let res: fencegw.WriteResult;
    try {
      res = await lease.write("debit", r.debit(r.n("amount_cents")));
    } catch (e) {
      r.observe["write"] = name(e);
      return;
    }
    r.observe["write"] = "ok";
    if (withReplayed) {
      r.observe["replayed"] = res.replayed;
    }
    const row = res.statements[0]?.rows?.[0];
    if (row !== undefined) {
      r.observe["balance"] = row["balance_cents"];
    }
  });
}

SCENARIOS["commit-cut"] = (r) => writeOnce(r, true);
SCENARIOS["unavailable-retried"] = (r) => writeOnce(r, false);

SCENARIOS["batch"] = async (r) => {
  const a = r.s("a");
  const b = r.s("b");
  await r.gw.withLock("account/" + a, { ttl: r.ms("ttl") }, async (la) => {
    await r.gw.withLock("account/" + b, { ttl: r.ms("ttl") }, async (lb) => {
      const move = (operation: string, lease: Lease, account: string, cents: number): fencegw.BatchWrite => ({
        operation,
        args: { account, amount_cents: cents },
        token: lease.token,
      });
      try {
        const res = await r.gw.batch([move("debit", la, a, 5), move("credit", lb, b, 5)]);
        r.observe["batch"] = "ok";
        r.observe["results"] = res.writes.length;
      } catch (e) {
        r.observe["batch"] = name(e);
      }
      try {
        await r.gw.batch([move("debit", la, a, 1), move("debit", lb, b, 99999999)]);
        r.observe["refused"] = "ok";
      } catch (e) {
        r.observe["refused"] = name(e);
        if (e instanceof fencegw.ProblemError) {
          r.observe["index"] = e.index;
        }
      }
    });
  });
};

SCENARIOS["read-check-deadline"] = async (r) => {
  const args = { account: r.p["account"] };
  const now = Date.now();
  let kept = "";
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
    const rows = (await lease.read("balance", args)).statements[0]?.rows ?? [];
    r.observe["read_rows"] = rows.length;
    if (rows[0] !== undefined) {
      r.observe["read_balance"] = rows[0]["balance_cents"];
    }
    r.observe["check"] = await outcome(() => lease.check());
    r.observe["past_deadline"] = await outcome(() => lease.write("debit", r.debit(1), { notAfter: new Date(now - 60_000) }));
    r.observe["future_deadline"] = await outcome(() => lease.write("debit", r.debit(1), { notAfter: new Date(now + 3_600_000) }));
    kept = lease.token;
  });
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
    await lease.write("debit", r.debit(1));
    r.observe["stale_check"] = await outcome(() => r.gw.check(kept, r.s("resource")));
    r.observe["stale_read"] = await outcome(() => r.gw.read("balance", args, { token: kept }));
  });
};

SCENARIOS["problem-types-real"] = async (r) => {
  const cases: Record<string, string> = {};
  r.observe["cases"] = cases;
  let sent = 0;
  const write = (f: () => Promise<unknown>): Promise<string> => {
    sent++;
    return outcome(f);
  };
  let first = "";
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
    first = lease.token;
  });
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
    await write(() => lease.write("debit", r.debit(1)));
    sent++;
    try {
      await r.gw.write("debit", r.debit(1), { token: first });
      cases["stale-token"] = "ok";
    } catch (e) {
      cases["stale-token"] = name(e);
      if (e instanceof fencegw.StaleTokenError) {
        r.observe["stale_current"] = e.currentToken === unsigned(lease.token);
      }
    }
    cases["token-required"] = await write(() => r.gw.write("debit", r.debit(1), { token: "" }));
    cases["bad-request"] = await write(() => lease.write("debit", r.debit(0)));
    cases["token-rejected"] = await write(() => r.gw.write("debit", r.debit(1), { token: r.s("forged_token") }));
    cases["unknown-operation"] = await write(() => lease.write("withdraw", r.debit(1)));
    cases["precondition-failed"] = await write(() => lease.write("debit", r.debit(99999999)));
    cases["constraint"] = await write(() => lease.write("open_account", { account: r.p["account"] }));
    const key = fencegw.newIdempotencyKey();
    await write(() => lease.write("debit", r.debit(1), { idempotencyKey: key }));
    cases["idempotency-mismatch"] = await write(() => lease.write("debit", r.debit(2), { idempotencyKey: key }));
    cases["deadline-passed"] = await write(() => lease.write("debit", r.debit(1), { notAfter: new Date(Date.now() - 60_000) }));
    cases["too-large"] = await write(() => lease.write("debit", { ...r.debit(1), pad: "x".repeat(r.n("large_bytes")) }));
    cases["locked"] = await outcome(() => r.gw.acquire(r.s("resource"), { ttl: r.ms("ttl") }));
  });
  cases["no-lock"] = await outcome(() => r.gw.revoke({ resource: r.s("absent"), reason: "conformance" }));
  r.observe["writes_sent"] = sent;
};

SCENARIOS["problem-types-injected"] = async (r) => {
  const got: Record<string, string> = {};
  r.observe["got"] = got;
  for (const c of r.sc["cases"] as Obj[]) {
    const kase = c["case"] as string;
    await r.ready("inject", { case: kase });
    got[kase] = await outcome(() => r.gw.check(r.s("token"), r.s("resource")));
  }
};

// What happens to the gateway around the client.

SCENARIOS["key-rotation"] = async (r) => {
  const args = r.debit(r.n("amount_cents"));
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
    await lease.write("debit", args);
    const granted = lease.token;
    await r.ready("holding");
    const end = performance.now() + 30_000;
    while (lease.token === granted && performance.now() < end) {
      await pause(20);
    }
    r.observe["resigned"] = lease.token !== granted;
    r.observe["same_place"] = unsigned(lease.token) === unsigned(granted);
    await r.ready("resigned");
    r.observe["write_after_retire"] = await outcome(() => lease.write("debit", args));
    r.observe["granted_token"] = await outcome(() => r.gw.write("debit", args, { token: granted }));
  });
};

SCENARIOS["watch-resume"] = async (r) => {
  const w = r.gw.watch(r.s("resource"));
  let timer = setTimeout(() => w.close(), 30_000); // bounds the waits below
  try {
    // next(), not for await: leaving a for await closes the watch.
    for (;;) {
      const next = await w.next();
      if (next.done || next.value.type === "synced") {
        break;
      }
    }
    await r.ready("synced");
    const types: string[] = [];
    r.observe["events"] = types;
    let changes = 0;
    clearTimeout(timer);
    timer = setTimeout(() => w.close(), 30_000);
    for (;;) {
      const next = await w.next();
      if (next.done) {
        break;
      }
      const ev = next.value;
      types.push(ev.type);
      if (ev.type === "relist") {
        break;
      }
      if (ev.type !== "state" && ev.type !== "synced" && ++changes >= r.n("changes")) {
        break;
      }
    }
  } finally {
    clearTimeout(timer);
    w.close();
  }
};

SCENARIOS["tls-bearer-file"] = async (r) => {
  await r.gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
    r.observe["cert_write"] = await outcome(() => lease.write("debit", r.debit(1)));
    r.observe["forbidden"] = await outcome(() => lease.write("open_account", { account: r.p["account"] }));
  });
  const gw = gateway(r.spec, r.vars["bearer_file"] as string);
  try {
    r.observe["expired_bearer"] = await outcome(async () => (await gw.acquire(r.s("resource"), { ttl: r.ms("ttl") })).release());
    await r.ready("refused");
    try {
      await gw.withLock(r.s("resource"), { ttl: r.ms("ttl") }, async (lease) => {
        r.observe["after_rewrite"] = "ok";
        r.observe["bearer_write"] = await outcome(() => lease.write("debit", r.debit(1)));
      });
    } catch (e) {
      r.observe["after_rewrite"] = name(e);
    }
  } finally {
    gw.close();
  }
};

async function main(): Promise<void> {
  if (process.argv.length !== 3) {
    process.stderr.write("usage: runner.js SCENARIOS.json\n");
    process.exit(2);
  }
  const file = JSON.parse(readFileSync(process.argv[2] as string, "utf8")) as { scenarios: Obj[] };
  const only = (process.env["FENCEGW_CONFORMANCE_ONLY"] ?? "").split(",").filter((s) => s !== "");
  for (const sc of file.scenarios) {
    const id = sc["id"] as string;
    if (only.length > 0 && !only.includes(id)) {
      continue;
    }
    emit({ event: "start", scenario: id });
    const setup = JSON.parse(await readLine()) as Obj;
    let error = "";
    let run: Run | undefined;
    try {
      run = new Run(sc, setup);
      const f = SCENARIOS[id];
      if (f === undefined) {
        error = "runner.ts does not know scenario " + id;
      } else {
        await f(run);
      }
    } catch (e) {
      process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
      error = `${(e as Error).name}: ${(e as Error).message}`;
    } finally {
      run?.gw.close();
    }
    emit({ event: "result", scenario: id, observed: run?.observe ?? {}, error });
  }
  process.exit(0);
}

await main();

// The seed chapter's refund worker (§9.10.3) with the TypeScript client:
// "refund intent 8842 is processed once", though the lock's TTL is shorter
// than a slow payment provider's answer and a second worker may take over
// while the first still waits. Three things in order make it safe: claim
// the intent before calling the provider; call the provider with the
// intent's id as its idempotency key, and on a timeout ask it what it did
// rather than send again; record the result through the gateway, fenced,
// pending -> done only. A worker whose lease expired meanwhile cannot
// record: its token is stale. The same worker as examples/refund (Go).
//
//   go run ./cmd/fencegw dev --demo examples/refund
//   go run ./examples/refund --psp-listen 127.0.0.1:9090 --psp-slow 45s
//   cd examples/refund/typescript && npm ci && npm run build
//   node build/refund.js --ttl 3      # A: Ctrl-Z while it waits for the provider
//   node build/refund.js              # B: takes over, records
//   fg                                # A: its record is refused, stale-token
//
// It prints what it did (--json: one JSON document) and exits 1 if it did
// not get the intent refunded or find it done.

import { parseArgs } from "node:util";

import { Gateway, ProblemError, unsigned } from "fencegw";

// How often a refund request left unanswered is sent again, once the
// provider said it has none under the key.
const MAX_SENDS = 3;

interface Report {
  intent: string;
  outcome?: string; // refunded, already-done, or why not: a problem kind (stale-token), "error"
  token?: string;
  psp_ref?: string;
  queried_psp?: boolean;
  current_token?: string;
  error?: string;
}

interface Refund {
  id: string;
  amount_cents: number;
}

const log = (msg: string): void => {
  process.stderr.write(msg + "\n");
};

/** The payment provider: POST /refunds makes a refund once per idempotency key; GET /refunds/{key} says what it made under it. */
class Provider {
  constructor(
    private readonly base: string,
    private readonly timeout: number, // ms
  ) {}

  /** The refund made under key, and whether it came from asking the provider after a request it left unanswered. */
  async refund(key: string, amountCents: number): Promise<[Refund, boolean]> {
    let queried = false;
    for (let i = 0; i < MAX_SENDS; i++) {
      try {
        return [(await this.call("POST", "/refunds", { idempotency_key: key, reference: key, amount_cents: amountCents })) as Refund, queried];
      } catch (e) {
        if (!(e instanceof Unanswered)) throw e;
        log(`provider: no answer (${e.message}); asking what it did under ${key}`);
      }
      queried = true;
      const made = await this.call("GET", "/refunds/" + encodeURIComponent(key));
      if (made !== undefined) {
        return [made as Refund, queried];
      }
    }
    throw new Error(`refund ${key}: ${MAX_SENDS} requests unanswered, and the provider has none`);
  }

  private async call(method: string, path: string, body?: object): Promise<unknown> {
    let resp: Response;
    try {
      resp = await fetch(this.base + path, {
        method,
        ...(body ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}),
        signal: AbortSignal.timeout(this.timeout),
      });
    } catch (e) {
      throw new Unanswered(`${method} ${path}: ${(e as Error).message}`); // it may have been made all the same
    }
    if (resp.status === 404 && method === "GET") return undefined; // no refund under the key
    if (resp.status >= 500) throw new Unanswered(`${method} ${path}: ${resp.status}`);
    if (!resp.ok) throw new Error(`provider refused ${method} ${path}: ${resp.status}`);
    return resp.json();
  }
}

class Unanswered extends Error {}

/**
 * Processes the refund of intent in the order that makes it happen once
 * whoever runs it and however late. Any step may be a run's last; the next
 * run resumes from the intent's state. rep gets what the run did, as far as
 * it went.
 */
async function refundOnce(rep: Report, gw: Gateway, psp: Provider, intent: string, amount: number, ttl: number, wait: number): Promise<void> {
  const resource = "refund/" + intent;
  await gw.withLock(resource, { ttl, wait }, async (lease) => {
    // Reports and logs get the unsigned token: the signed one is a capability.
    const token = lease.token;
    rep.token = unsigned(token);
    log(`${resource}: lock taken, token ${rep.token}`);

    // 1. Claim before the provider hears of the refund.
    const res = await lease.write("claim_refund", { intent, amount_cents: amount });
    const row = res.statements.length === 2 ? res.statements[1]?.rows?.[0] : undefined;
    if (row === undefined) {
      throw new Error("claim_refund: no row for the intent (is the gateway serving examples/refund/policy.yaml?)");
    }
    if (row["amount_cents"] !== amount) {
      throw new Error(`claim ${resource}: the intent is for ${String(row["amount_cents"])} cents, not ${amount}`);
    }
    if (row["status"] === "done") {
      log(`${resource}: already done, provider reference ${String(row["psp_ref"])}`);
      rep.outcome = "already-done";
      rep.psp_ref = row["psp_ref"] as string;
      return;
    }

    // 2. The intent's id is the provider's idempotency key: a worker that
    // took over asks for the same refund, not a second one.
    log(`${resource}: claimed (${String(row["status"])}); asking the provider to refund ${amount} cents`);
    const [made, queried] = await psp.refund(intent, amount);
    rep.psp_ref = made.id;
    rep.queried_psp = queried;
    log(`${resource}: provider refund ${made.id} (queried after an unanswered request: ${queried}); recording it`);

    // 3. Record with the token of step 1, through gw.write rather than
    // lease.write on purpose: lease.write refuses to send once the lease is
    // past its local deadline, but a process paused between that check and
    // the send (GC, SIGSTOP, a slow provider answer delivered late) sends
    // anyway what it prepared. That send is what this example shows
    // refused: by the fence in PostgreSQL, the one check a pause cannot
    // slip past.
    await gw.write("record_refund", { intent, psp_ref: made.id }, { token });
    log(`${resource}: recorded`);
    rep.outcome = "refunded";
  });
}

async function main(): Promise<number> {
  const { values: a } = parseArgs({
    options: {
      gateway: { type: "string", default: process.env["FENCEGW_URL"] ?? "http://127.0.0.1:8080" },
      intent: { type: "string", default: "8842" },
      amount: { type: "string", default: "2500" }, // cents
      ttl: { type: "string", default: "30" }, // seconds
      wait: { type: "string", default: "60" }, // seconds
      psp: { type: "string", default: "http://127.0.0.1:9090" },
      "psp-timeout": { type: "string", default: "60" }, // seconds for one provider answer before asking what it did
      json: { type: "boolean", default: false },
    },
  });
  const rep: Report = { intent: a.intent };
  const bearer = process.env["FENCEGW_BEARER_TOKEN"];
  const gw = new Gateway(a.gateway, bearer ? { bearer } : {});
  let err: unknown;
  try {
    await refundOnce(rep, gw, new Provider(a.psp, Number(a["psp-timeout"]) * 1000), a.intent, Number(a.amount), Number(a.ttl) * 1000, Number(a.wait) * 1000);
  } catch (e) {
    err = e;
    rep.outcome = e instanceof ProblemError ? (e.kind ?? "error") : "error";
    rep.error = (e as Error).message;
    if (e instanceof ProblemError && e.currentToken) {
      rep.current_token = e.currentToken;
    }
  } finally {
    gw.close();
  }
  if (a.json) {
    process.stdout.write(JSON.stringify(rep) + "\n");
  } else {
    process.stdout.write(`refund ${rep.intent}: ${rep.outcome}, token ${rep.token ?? ""}, provider refund ${JSON.stringify(rep.psp_ref ?? "")}\n`);
    if (err !== undefined) {
      process.stdout.write(`  ${rep.error}\n`);
    }
  }
  return err === undefined ? 0 : 1;
}

process.exitCode = await main();

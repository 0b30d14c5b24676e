// The TypeScript client's benchmark driver, run by `fencegw bench
// --client-libraries` (internal/harness/bench/clientlibs.go says the
// protocol): writers async loops, each holding a lease on an account of
// the bench policy, write `add` in a closed loop through the client (--path
// client) or through Node's bare HTTP calls of the same request, the same
// headers and a new Idempotency-Key per write: node:http with a keep-alive
// agent, as the client uses (--path bare), or fetch (--path bare-fetch).
// Prints one JSON object: writes, errors, seconds and each measured write's
// latency in microseconds.

import { Agent, request } from "node:http";
import { parseArgs } from "node:util";

import { Gateway, newIdempotencyKey, type Lease } from "../src/index.js";

const { values: a } = parseArgs({
  options: {
    gateway: { type: "string" },
    path: { type: "string" },
    writers: { type: "string" },
    "first-account": { type: "string" },
    "warmup-ms": { type: "string" },
    "duration-ms": { type: "string" },
  },
});
const base = a.gateway as string;
const writers = Number(a.writers);
const first = Number(a["first-account"]);
const warmup = Number(a["warmup-ms"]);
const duration = Number(a["duration-ms"]);

const gw = new Gateway(base, { timeout: 30_000 });
const leases: Lease[] = [];
for (let w = 0; w < writers; w++) {
  leases.push(await gw.acquire(`acct/${first + w}`, { ttl: 120_000, wait: 10_000 }));
}

const agent = new Agent({ keepAlive: true });
const url = new URL("/v1/ops/add", base);

function headers(lease: Lease): Record<string, string> {
  return {
    "content-type": "application/json",
    accept: "application/json, application/problem+json",
    "fencing-token": lease.token,
    "idempotency-key": `"${newIdempotencyKey()}"`,
  };
}

function bareHTTP(lease: Lease, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", agent, headers: { ...headers(lease), "content-length": Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function bareFetch(lease: Lease, body: string): Promise<void> {
  const res = await fetch(url, { method: "POST", headers: headers(lease), body });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`status ${res.status}`);
}

const lat: number[] = [];
let errors = 0;
const start = performance.now();
const from = start + warmup;
const until = from + duration;

async function writer(w: number): Promise<void> {
  const lease = leases[w] as Lease;
  const args = { id: first + w, amount: 1 };
  const body = JSON.stringify(args);
  const send =
    a.path === "client" ? () => lease.write("add", args) : a.path === "bare" ? () => bareHTTP(lease, body) : () => bareFetch(lease, body);
  for (;;) {
    const t0 = performance.now();
    if (t0 >= until) return;
    try {
      await send();
    } catch {
      errors++;
      continue;
    }
    if (t0 >= from) lat.push(Math.round((performance.now() - t0) * 1000));
  }
}

await Promise.all(Array.from({ length: writers }, (_, w) => writer(w)));
await Promise.all(leases.map((l) => l.release()));
gw.close();
agent.destroy();
process.stdout.write(JSON.stringify({ writes: lat.length, errors, seconds: duration / 1000, latencies_us: lat }) + "\n");

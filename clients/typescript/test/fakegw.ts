// A stand-in for what sits between a client and the gateway: a local
// HTTP/1.1 server whose answers a test writes byte for byte (a proxy's HTML
// page, a body cut short, a stream that stops mid-event, a connection
// closed without an answer). The client's dealings with the real gateway
// are proven by the conformance suite (clients/conformance); these tests
// feed it what the real gateway never sends.

import { createServer, type IncomingMessage, type Server } from "node:http";
import { createServer as createNetServer } from "node:net";
import type { AddressInfo, Socket } from "node:net";

export interface Request {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  json(): Record<string, unknown>;
}

/**
 * What the server does: an answer; `raw` bytes written as they are (then
 * the connection closes, once `thenHold` settles if set); `close` closes
 * without answering; `hold` is awaited first.
 */
export interface Reply {
  status?: number;
  body?: string | object;
  contentType?: string;
  headers?: Record<string, string>;
  raw?: string | Buffer;
  close?: boolean;
  hold?: Promise<unknown>;
  thenHold?: Promise<unknown>;
}

export type Route = (req: Request) => Reply;

export class FakeGateway {
  readonly requests: Request[] = [];
  connections = 0;
  url = "";
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(public route: Route) {
    this.server = createServer((req, res) => {
      void this.serve(req, res.socket as Socket, (r) => {
        const body = typeof r.body === "string" ? r.body : r.body === undefined ? "" : JSON.stringify(r.body);
        res.writeHead(r.status ?? 200, { "content-type": r.contentType ?? "application/json", "content-length": Buffer.byteLength(body), ...r.headers });
        res.end(body);
      });
    });
    this.server.on("connection", (s: Socket) => {
      this.connections++;
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
  }

  private async serve(req: IncomingMessage, socket: Socket, answer: (r: Reply) => void): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) {
      chunks.push(c as Buffer);
    }
    const body = Buffer.concat(chunks).toString("utf8");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      headers[k] = Array.isArray(v) ? v.join(", ") : (v ?? "");
    }
    const r: Request = { method: req.method ?? "", path: req.url ?? "", headers, body, json: () => JSON.parse(body) as Record<string, unknown> };
    this.requests.push(r);
    const reply = this.route(r);
    if (reply.hold) {
      await reply.hold;
    }
    if (reply.close) {
      socket.destroy();
      return;
    }
    if (reply.raw !== undefined) {
      socket.write(reply.raw);
      if (reply.thenHold) {
        await reply.thenHold;
      }
      socket.end();
      return;
    }
    answer(reply);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  count(method: string, pathPrefix: string): number {
    return this.requests.filter((r) => r.method === method && r.path.startsWith(pathPrefix)).length;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) {
      s.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export async function serve(route: Route): Promise<FakeGateway> {
  return new FakeGateway(route).start();
}

/** A URL nothing listens at: connections are refused. */
export async function deadURL(): Promise<string> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

export function problem(kind: string, status: number, fields: Record<string, unknown> = {}): Reply {
  return { status, body: { type: "urn:fencegw:problem:" + kind, title: kind, status, ...fields }, contentType: "application/problem+json" };
}

export const TOKEN = "1:7:QUJDREVGR0hJSktMTU5PUA";

export function grant(o: { leaseId?: string; resource?: string; token?: string; ttl?: number } = {}): Reply {
  return { status: 201, body: { lease_id: o.leaseId ?? "1a2b", resource: o.resource ?? "account/acct-1", token: o.token ?? TOKEN, ttl: o.ttl ?? 10 } };
}

export function written(balance = 900): Reply {
  return {
    body: {
      operation: "debit",
      resource: "account/acct-1",
      token: "1:7",
      statements: [{ rows_affected: 1, rows: [{ id: "acct-1", balance_cents: balance }] }, { rows_affected: 1 }],
    },
  };
}

export type Kind = "acquire" | "keepalive" | "release" | "write" | "watch" | "check" | "other";

export function kindOf(req: Request): Kind {
  const p = req.path;
  if (req.method === "POST" && p === "/v1/leases") return "acquire";
  if (req.method === "POST" && p.endsWith("/keepalive")) return "keepalive";
  if (req.method === "DELETE" && p.startsWith("/v1/leases/")) return "release";
  if (req.method === "POST" && p.startsWith("/v1/ops/")) return "write";
  if (req.method === "GET" && p.startsWith("/v1/leases/watch")) return "watch";
  if (req.method === "POST" && p === "/v1/fences/check") return "check";
  return "other";
}

/**
 * A gateway of one lease: acquisitions granted, keepalives as asked,
 * releases 204, writes applied; more overrides by kind.
 */
export function leaseRoutes(keepalive: Route, ttl = 10, more: Partial<Record<Kind, Route>> = {}): Route {
  return (req) => {
    const kind = kindOf(req);
    const f = more[kind];
    if (f !== undefined) return f(req);
    if (kind === "acquire") return grant({ ttl });
    if (kind === "keepalive") return keepalive(req);
    if (kind === "release") return { status: 204, body: "" };
    if (kind === "write") return written();
    return problem("not-found", 404);
  };
}

export function renewed(ttl = 10, token = TOKEN): Route {
  return () => ({ body: { lease_id: "1a2b", ttl, token } });
}

/** Answers requests with replies in turn, then with the last one. */
export function scripted(...replies: Reply[]): Route {
  return () => (replies.length > 1 ? (replies.shift() as Reply) : (replies[0] as Reply));
}

/** A promise and its resolve, for a test to hold an answer back. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** Waits for the signal to abort, or fails after ms. */
export function aborted(signal: AbortSignal, ms = 10_000): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the signal did not abort in ${ms} ms`)), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** Waits for cond (an event the test cannot await directly), or fails after ms. */
export async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error("waited in vain");
    await new Promise((r) => setTimeout(r, 10));
  }
}

// The HTTP layer: connections kept alive per replica, failover to the next
// replica when an answer is lost, and the retry rules every fencegw client
// shares (docs/clients.md).

import type { IncomingMessage } from "node:http";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

import { Agents, Bearer } from "./credentials.js";
import {
  AuthorityHaltedError,
  ConfigurationError,
  GatewayUnreachableError,
  MAX_ERROR_BODY,
  UnavailableError,
  errorFromAnswer,
} from "./errors.js";
import { CertificateError, Lost, NotSent, exchange, hostHeader, isCertificateError, type Answer, type Target } from "./exchange.js";
import { VERSION } from "./version.js";

export type { Answer } from "./exchange.js";

// How often one request is sent while its answers are lost: the first time
// and three more, each to the next replica, after a backoff.
export const ATTEMPTS = 4;
const BACKOFF_MIN = 100;
const BACKOFF_MAX = 1000;

const USER_AGENT = `fencegw-typescript/${VERSION}`;

export interface RequestOptions {
  body?: string;
  headers?: Record<string, string>;
  /** ms for each attempt; the transport's timeout if not given. */
  timeout?: number;
  /** May it be sent again while its answer is lost? (it writes nothing, or carries its Idempotency-Key) */
  resend?: boolean;
  /** A performance.now() reading after which no attempt starts. */
  deadline?: number;
  /** The statuses that are the call's success. */
  want?: readonly number[];
  signal?: AbortSignal | undefined;
}

class Replica implements Target {
  readonly https: boolean;
  readonly host: string;
  readonly port: number;
  readonly prefix: string;
  readonly name: string;

  constructor(url: string, index: number) {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new ConfigurationError(`gateway URL #${index + 1} is not http(s)://host[:port][/path]`);
    }
    // The URL stays out of the message: it may hold a password.
    if ((u.protocol !== "http:" && u.protocol !== "https:") || !u.hostname || u.search || u.hash) {
      throw new ConfigurationError(`gateway URL #${index + 1} is not http(s)://host[:port][/path]`);
    }
    this.https = u.protocol === "https:";
    this.host = u.hostname.replace(/^\[(.*)\]$/, "$1");
    this.port = u.port ? Number(u.port) : this.https ? 443 : 80;
    this.prefix = u.pathname.replace(/\/+$/, "");
    this.name = `${u.protocol}//${hostHeader(this)}`;
  }
}

/**
 * Requests to the gateway's replicas, asked in the order given: the first is
 * preferred until its answer is lost, then the next one is, and so on round.
 */
export class Transport {
  private readonly replicas: Replica[];
  private preferred = 0;
  /** Tests: called with each attempt's replica and path. */
  onAttempt: ((replica: string, path: string) => void) | undefined;

  constructor(
    urls: string | readonly string[],
    private readonly bearer: Bearer,
    private readonly agents: Agents,
    readonly timeout: number,
    private readonly attempts = ATTEMPTS,
  ) {
    const list = typeof urls === "string" ? [urls] : [...urls];
    if (list.length === 0) {
      throw new ConfigurationError("no gateway URL");
    }
    this.replicas = list.map((u, i) => new Replica(u, i));
  }

  closeIdle(): void {
    this.agents.closeIdle();
  }

  /**
   * Sends the request and returns an answer of a status in want, or throws
   * the error the answer describes.
   *
   * While the answer is lost (no connection, a broken one, a 502, 503 or
   * 504) the next replica becomes the preferred one and, if resend allows it
   * (the request writes nothing, or carries its Idempotency-Key), the request
   * is sent again after a backoff, up to ATTEMPTS times and until deadline.
   * The error thrown then is the last one's, except that one that says "not
   * applied" never hides an earlier attempt that may have been: that one's
   * is thrown.
   */
  async request(method: string, path: string, o: RequestOptions = {}): Promise<Answer> {
    const headers: Record<string, string> = { accept: "application/json, application/problem+json", "user-agent": USER_AGENT };
    if (o.body !== undefined) {
      headers["content-type"] = "application/json";
    }
    Object.assign(headers, o.headers);
    const attempts = o.resend ? this.attempts : 1;
    // A kept-alive connection the server closed while idle is replaced at
    // once when sending again cannot apply anything twice.
    const staleRetry = Boolean(o.resend) || method !== "POST" || path.endsWith("/keepalive");
    // One credential for every attempt of the request; one that cannot be
    // read is a CredentialError, nothing sent.
    const token = this.bearer.current();
    if (token) {
      headers["authorization"] = "Bearer " + token;
    }
    const want = o.want ?? [200];
    let backoff = BACKOFF_MIN;
    let unknown: UnavailableError | undefined;
    let last: UnavailableError | undefined;
    let reached = false;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      let t = o.timeout ?? this.timeout;
      if (o.deadline !== undefined) {
        t = Math.min(t, o.deadline - performance.now());
        if (t <= 0) {
          break;
        }
      }
      const i = this.preferred;
      const replica = this.replicas[i] as Replica;
      this.onAttempt?.(replica.name, path);
      let err: UnavailableError;
      try {
        const answer = await this.send(replica, method, path, o.body, headers, t, staleRetry, o.signal);
        reached = true;
        if (want.includes(answer.status)) {
          return answer;
        }
        const failure = errorFromAnswer(answer.status, answer.headers["content-type"] ?? "", answer.body);
        if (failure instanceof AuthorityHaltedError || !(failure instanceof UnavailableError)) {
          throw failure;
        }
        err = failure;
      } catch (e) {
        if (e instanceof CertificateError) {
          throw new GatewayUnreachableError(0, {}, { message: `${replica.name}: the gateway's certificate: ${e.message}`, outcome: "not-applied" });
        } else if (e instanceof NotSent) {
          err = new GatewayUnreachableError(0, {}, { message: `${replica.name}: cannot connect: ${e.message}`, outcome: "not-applied" });
        } else if (e instanceof Lost) {
          reached = true;
          err = new UnavailableError(0, {}, { message: `${replica.name}: the answer was lost: ${e.message}`, outcome: "unknown" });
        } else if (e instanceof UnavailableError && !(e instanceof AuthorityHaltedError)) {
          err = e;
        } else {
          throw e;
        }
      }
      if (this.preferred === i) {
        this.preferred = (i + 1) % this.replicas.length;
      }
      last = err;
      if (err.outcome !== "not-applied") {
        unknown = err;
      }
      if (attempt === attempts) {
        break;
      }
      const pause = backoff * (0.5 + Math.random() / 2);
      if (o.deadline !== undefined && performance.now() + pause >= o.deadline) {
        break;
      }
      await sleep(pause, o.signal);
      backoff = Math.min(2 * backoff, BACKOFF_MAX);
    }
    if (last === undefined) {
      throw new GatewayUnreachableError(0, {}, { message: "no time left to send the request", outcome: "not-applied" });
    }
    if (!reached && last instanceof GatewayUnreachableError && this.replicas.length > 1) {
      throw new GatewayUnreachableError(0, {}, {
        message: `no replica of ${this.replicas.length} could be reached: ${last.message}`,
        outcome: "not-applied",
      });
    }
    throw unknown ?? last;
  }

  private async send(
    replica: Replica,
    method: string,
    path: string,
    body: string | undefined,
    headers: Record<string, string>,
    timeout: number,
    staleRetry: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Answer> {
    const agent = replica.https ? this.agents.https() : this.agents.http();
    const start = performance.now();
    const o = { method, path, body, headers, timeout, signal };
    try {
      return await exchange(replica, agent, o);
    } catch (e) {
      if (e instanceof Lost && e.staleConnection && staleRetry) {
        // Node took a kept-alive connection the server had closed: once
        // more, on a new one.
        o.timeout = Math.max(1, timeout - (performance.now() - start));
        return await exchange(replica, agent, o);
      }
      throw e;
    }
  }

  /**
   * Opens a stream (a watch) on the preferred replica, once: the 200 answer
   * to read from. A lost answer makes the next replica the preferred one.
   */
  openStream(path: string, extra: Record<string, string>, signal?: AbortSignal): Promise<IncomingMessage> {
    const headers: Record<string, string> = { accept: "text/event-stream, application/problem+json", "user-agent": USER_AGENT, ...extra };
    const token = this.bearer.current();
    if (token) {
      headers["authorization"] = "Bearer " + token;
    }
    const i = this.preferred;
    const replica = this.replicas[i] as Replica;
    const lost = (err: UnavailableError): UnavailableError => {
      if (this.preferred === i) {
        this.preferred = (i + 1) % this.replicas.length;
      }
      return err;
    };
    return new Promise<IncomingMessage>((resolve, reject) => {
      let connected = false;
      const req = (replica.https ? httpsRequest : httpRequest)({
        host: replica.host,
        port: replica.port,
        path: replica.prefix + path,
        method: "GET",
        headers: { ...headers, host: hostHeader(replica) },
        agent: replica.https ? this.agents.https() : this.agents.http(),
        ...(signal ? { signal } : {}),
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer in ${this.timeout} ms`)), this.timeout);
      req.on("socket", (s) => {
        if (req.reusedSocket || !s.connecting) {
          connected = true;
        } else {
          s.once(replica.https ? "secureConnect" : "connect", () => (connected = true));
        }
      });
      req.on("error", (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        if (signal?.aborted) {
          reject(signal.reason);
        } else if (isCertificateError(e.code)) {
          reject(new GatewayUnreachableError(0, {}, { message: `${replica.name}: the gateway's certificate: ${e.message}`, outcome: "not-applied" }));
        } else if (!connected) {
          reject(lost(new GatewayUnreachableError(0, {}, { message: `${replica.name}: cannot connect: ${e.message}`, outcome: "not-applied" })));
        } else {
          reject(lost(new UnavailableError(0, {}, { message: `${replica.name}: the answer was lost: ${e.message}`, outcome: "unknown" })));
        }
      });
      req.on("response", (res) => {
        clearTimeout(timer);
        if (res.statusCode === 200) {
          resolve(res);
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          if (size < MAX_ERROR_BODY) {
            chunks.push(c);
            size += c.length;
          }
        });
        res.on("error", () => {});
        res.on("close", () => {
          const err = errorFromAnswer(res.statusCode ?? 0, res.headers["content-type"] ?? "", Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY));
          reject(err instanceof UnavailableError && !(err instanceof AuthorityHaltedError) ? lost(err) : err);
        });
      });
      req.end();
    });
  }
}

/** Waits ms, or until signal aborts (then throws its reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

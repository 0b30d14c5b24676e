// One HTTP exchange with one replica over node:http / node:https, and what
// became of it when it failed: never sent (the connection failed first), or
// sent with its answer lost. Node's fetch is not used: it takes no TLS
// options (a CA, a client certificate) without undici's Agent, which Node
// 20 does not export, and node:http's keep-alive Agent costs a fraction of
// fetch per request (`fencegw bench --client-libraries`, BENCHMARKS.md).

import { request as httpRequest, type Agent, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";

import { MAX_ERROR_BODY, UnexpectedResponseError } from "./errors.js";

/** A success body beyond this is refused: a misbehaving server must not make the client buffer without bound. */
export const MAX_RESULT_BODY = 32 << 20;

export interface Answer {
  status: number;
  headers: Record<string, string>; // lower-case names
  body: Buffer;
}

/** The connection failed before the request left: nothing was sent. */
export class NotSent extends Error {}

/** The request may have been sent; its answer did not come. */
export class Lost extends Error {
  constructor(
    message: string,
    /** The request went on a kept-alive connection that broke before any answer: the server may have closed it idle. */
    readonly staleConnection: boolean,
  ) {
    super(message);
  }
}

/** The gateway's certificate did not verify: no replica will do better, nothing was sent. */
export class CertificateError extends Error {}

export interface Target {
  https: boolean;
  host: string;
  port: number;
  prefix: string;
}

export interface ExchangeOptions {
  method: string;
  path: string;
  body: string | undefined;
  headers: Record<string, string>;
  timeout: number; // ms for the whole exchange
  signal: AbortSignal | undefined;
}

const CERT_ERRORS = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** Is code Node's for a certificate that did not verify? */
export function isCertificateError(code: string | undefined): boolean {
  return code !== undefined && CERT_ERRORS.has(code);
}

/** Sends one request on agent and reads its whole answer, bounded. */
export function exchange(target: Target, agent: Agent, o: ExchangeOptions): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    if (o.signal?.aborted) {
      reject(o.signal.reason);
      return;
    }
    const headers: Record<string, string | number> = { ...o.headers, host: hostHeader(target) };
    if (o.body !== undefined) {
      headers["content-length"] = Buffer.byteLength(o.body);
    }
    const req = (target.https ? httpsRequest : httpRequest)({
      host: target.host,
      port: target.port,
      path: target.prefix + o.path,
      method: o.method,
      headers,
      agent,
      ...(target.https ? { servername: isIP(target.host) ? "" : target.host } : {}),
    });
    let connected = false;
    let reused = false;
    let answered = false;
    let settled = false;
    let aborted: unknown = undefined;
    const finish = (err: unknown, answer?: Answer): void => {
      if (settled) {
        return;
      }
      settled = true;
      clearTimeout(timer);
      o.signal?.removeEventListener("abort", onAbort);
      if (err !== undefined) {
        reject(err);
      } else {
        resolve(answer as Answer);
      }
    };
    const fail = (e: Error): void => {
      if (aborted !== undefined) {
        finish(aborted);
        return;
      }
      const code = (e as NodeJS.ErrnoException).code ?? "";
      if (isCertificateError(code)) {
        finish(new CertificateError(`${code}: ${e.message}`));
      } else if (!connected) {
        finish(new NotSent(e.message || code));
      } else {
        finish(new Lost(e.message || code, reused && !answered && (code === "ECONNRESET" || code === "EPIPE")));
      }
    };
    const onAbort = (): void => {
      aborted = o.signal?.reason;
      req.destroy(new Error("aborted"));
    };
    o.signal?.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(() => req.destroy(new Error(`no answer in ${o.timeout} ms`)), Math.max(1, o.timeout));
    req.on("socket", (s) => {
      reused = req.reusedSocket;
      if (reused || !s.connecting) {
        connected = true;
      } else {
        s.once(target.https ? "secureConnect" : "connect", () => {
          connected = true;
        });
      }
    });
    req.on("error", fail);
    req.on("response", (res: IncomingMessage) => {
      answered = true;
      const status = res.statusCode ?? 0;
      const limit = status >= 200 && status < 300 ? MAX_RESULT_BODY : MAX_ERROR_BODY;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        if (size >= limit) {
          return;
        }
        chunks.push(c);
        size += c.length;
        if (size > limit) {
          res.destroy(); // not read to its end: the connection is not kept
          if (status >= 200 && status < 300) {
            finish(new UnexpectedResponseError(`the ${status} answer is larger than ${limit} bytes`, { status }));
          } else {
            finish(undefined, answerOf(res, Buffer.concat(chunks).subarray(0, limit)));
          }
        }
      });
      res.on("end", () => {
        if (res.complete) {
          finish(undefined, answerOf(res, Buffer.concat(chunks)));
        }
      });
      res.on("error", fail);
      res.on("close", () => {
        if (!res.complete) {
          fail(new Error("the answer was cut short"));
        }
      });
    });
    req.end(o.body);
  });
}

function answerOf(res: IncomingMessage, body: Buffer): Answer {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) {
    if (v !== undefined) {
      headers[k] = Array.isArray(v) ? v.join(", ") : v;
    }
  }
  return { status: res.statusCode ?? 0, headers, body };
}

export function hostHeader(t: Target): string {
  const host = t.host.includes(":") ? `[${t.host}]` : t.host;
  return (t.https && t.port === 443) || (!t.https && t.port === 80) ? host : `${host}:${t.port}`;
}

function isIP(host: string): boolean {
  return /^[0-9.]+$/.test(host) || host.includes(":");
}

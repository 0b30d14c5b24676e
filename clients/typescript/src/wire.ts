// The wire forms the API shares: tokens, Idempotency-Key, role tokens,
// Fencing-Not-After, JSON bodies.

import { randomBytes } from "node:crypto";

import { ConfigurationError, UnexpectedResponseError, isObject } from "./errors.js";

export const TOKEN_HEADER = "fencing-token";
export const IDEMPOTENCY_HEADER = "idempotency-key";
export const REPLAYED_HEADER = "idempotent-replayed";
export const NOT_AFTER_HEADER = "fencing-not-after";

/** A fencing token, or for an operation with several resources each role's token. */
export type Token = string | Readonly<Record<string, string>>;

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/**
 * A new random key of 160 bits, in base32: printable, as the header
 * requires.
 */
export function newIdempotencyKey(): string {
  const b = randomBytes(20);
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of b) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out; // 160 bits: 32 characters, no padding
}

/** key as an RFC 8941 string. */
export function idempotencyHeader(key: string): string {
  if (typeof key !== "string" || key.length === 0 || key.length > 255 || !/^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/.test(key)) {
    throw new ConfigurationError("an idempotency key is 1 to 255 printable ASCII characters, without quotes or backslashes");
  }
  return `"${key}"`;
}

/**
 * A token without its signature ("1:42" of "1:42:SIGNATURE"): its place in
 * the order, as the gateway shows tokens in answers and problems. Only the
 * signed token is a capability.
 */
export function unsigned(token: string): string {
  const parts = token.split(":");
  return parts.length >= 2 ? `${parts[0]}:${parts[1]}` : token;
}

/**
 * The Fencing-Token field: a token, or for an operation with several
 * resources an RFC 8941 dictionary of each role's token.
 */
export function tokenField(token: Token): string {
  if (typeof token === "string") {
    return token;
  }
  return Object.keys(token)
    .sort()
    .map((role) => `${role}="${String(token[role]).replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`)
    .join(", ");
}

/** A Date in RFC 3339, UTC. */
export function notAfterHeader(when: Date): string {
  if (!(when instanceof Date) || Number.isNaN(when.getTime())) {
    throw new ConfigurationError("notAfter must be a valid Date");
  }
  return when.toISOString();
}

export function encode(body: unknown): string {
  let s: string | undefined;
  try {
    s = JSON.stringify(body, (_k, v: unknown) => {
      if (typeof v === "number" && !Number.isFinite(v)) {
        throw new TypeError(`${v} is not a JSON number`);
      }
      if (typeof v === "bigint") {
        // Exact only within 2^53, as the gateway reads JSON numbers.
        if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
          throw new TypeError(`${v} is beyond 2^53`);
        }
        return Number(v);
      }
      return v;
    });
  } catch (e) {
    throw new ConfigurationError(`the request does not encode as JSON: ${(e as Error).message}`);
  }
  if (s === undefined) {
    throw new ConfigurationError("the request does not encode as JSON");
  }
  return s;
}

/** A JSON object of a success answer, or UnexpectedResponseError. */
export function decodeObject(body: Uint8Array, what: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch (e) {
    throw new UnexpectedResponseError(`${what}: the answer does not decode: ${(e as Error).message}`);
  }
  if (!isObject(doc)) {
    throw new UnexpectedResponseError(`${what}: the answer is not a JSON object`);
  }
  return doc;
}

// What the gateway answers, decoded and checked: a success whose body lacks
// what it must hold is an UnexpectedResponseError, never a half-filled
// result.

import { UnexpectedResponseError, isObject } from "./errors.js";
import type { Token } from "./wire.js";

export type Row = Record<string, unknown>;

/** One statement's outcome: rows affected, and rows returned (null for a statement that returns none). */
export interface Statement {
  readonly rowsAffected: number;
  readonly rows: Row[] | null;
}

/**
 * One role's resource and token in an answer (and, in a read or a check,
 * the fence it was held to; "" when never written).
 */
export interface Fence {
  readonly role: string;
  readonly resource: string;
  readonly token: string;
  readonly fence: string;
}

/**
 * An applied write. `replayed` is true when the answer is the stored one of
 * the write's first execution (a retry under its key): it ran once, earlier.
 */
export interface WriteResult {
  readonly operation: string;
  readonly resource: string;
  readonly token: string;
  readonly fences: Fence[];
  readonly statements: Statement[];
  readonly replayed: boolean;
  readonly raw: Record<string, unknown>;
}

/** A fenced read: the rows, and the fence each token was held to. */
export interface ReadResult {
  readonly operation: string;
  readonly resource: string;
  readonly token: string;
  readonly fence: string;
  readonly fences: Fence[];
  readonly statements: Statement[];
  readonly raw: Record<string, unknown>;
}

/** A fence check: each role's token and the fence it was held to. */
export interface CheckResult {
  readonly fences: Fence[];
}

/** An applied batch: one result per write, in order. */
export interface BatchResult {
  readonly writes: WriteResult[];
  readonly replayed: boolean;
}

/** One write of a batch: its token is a string, or each role's token for an operation with several resources. */
export interface BatchWrite {
  operation: string;
  args?: Record<string, unknown>;
  token: Token;
}

/** A holder or waiter as anyone may see it: its place in the order (an unsigned token), its remaining TTL in seconds, its value. */
export interface Contender {
  readonly token: string;
  readonly ttl: number;
  readonly value: string;
}

/** A held slot of a semaphore. */
export interface PermitHolder {
  readonly permit: number;
  readonly resource: string;
  readonly holder: Contender;
  readonly transitions: number;
}

/** A lock as the gateway shows it (a semaphore's: `permits` and its held slots in `holders`). */
export interface LockState {
  readonly resource: string;
  readonly revision: number;
  readonly holder: Contender | null;
  readonly waiters: Contender[];
  readonly waiting: number;
  readonly transitions: number;
  readonly permits: number;
  readonly holders: PermitHolder[];
}

/** The type of a watch event. */
export type WatchEventType = "state" | "synced" | "granted" | "value" | "released" | "expired" | "revoked" | "ended" | "relist" | (string & {});

/**
 * A watch's event: `state` (one per lock), `synced`, then each change:
 * `granted`, `value`, `released`, `expired`, `revoked`, `ended`; `relist`
 * when etcd forgot changes the watch had not seen (what the reader knew is
 * void; the state follows again).
 */
export interface WatchEvent {
  readonly type: WatchEventType;
  readonly resource: string;
  readonly revision: number;
  readonly holder: Contender | null;
  readonly transitions: number;
  readonly permit: number;
  readonly id: string;
}

type Kind = "string" | "integer" | "array" | "object";

function get(doc: Record<string, unknown>, key: string, kind: Kind, what: string, required = false): unknown {
  const v = doc[key];
  if (v === undefined || v === null) {
    if (required) {
      throw new UnexpectedResponseError(`${what}: the answer lacks ${key}`);
    }
    return undefined;
  }
  const ok =
    kind === "string" ? typeof v === "string" : kind === "integer" ? Number.isSafeInteger(v) : kind === "array" ? Array.isArray(v) : isObject(v);
  if (!ok) {
    throw new UnexpectedResponseError(`${what}: ${key} is not ${kind === "integer" ? "an integer" : "a " + kind}`);
  }
  return v;
}

const str = (doc: Record<string, unknown>, key: string, what: string): string => (get(doc, key, "string", what) as string | undefined) ?? "";
const int = (doc: Record<string, unknown>, key: string, what: string): number => (get(doc, key, "integer", what) as number | undefined) ?? 0;
const arr = (doc: Record<string, unknown>, key: string, what: string): unknown[] => (get(doc, key, "array", what) as unknown[] | undefined) ?? [];

export function statements(doc: Record<string, unknown>, what: string): Statement[] {
  return arr(doc, "statements", what).map((st) => {
    if (!isObject(st)) {
      throw new UnexpectedResponseError(`${what}: a statement is not an object`);
    }
    const rows = get(st, "rows", "array", what) as unknown[] | undefined;
    if (rows !== undefined && !rows.every(isObject)) {
      throw new UnexpectedResponseError(`${what}: a row is not an object`);
    }
    return { rowsAffected: int(st, "rows_affected", what), rows: (rows as Row[] | undefined) ?? null };
  });
}

export function fences(doc: Record<string, unknown>, what: string): Fence[] {
  return arr(doc, "fences", what).map((f) => {
    if (!isObject(f)) {
      throw new UnexpectedResponseError(`${what}: a fence is not an object`);
    }
    return { role: str(f, "role", what), resource: str(f, "resource", what), token: str(f, "token", what), fence: str(f, "fence", what) };
  });
}

export function writeResult(doc: Record<string, unknown>, replayed: boolean, what: string): WriteResult {
  if (!("statements" in doc)) {
    throw new UnexpectedResponseError(`${what}: the answer lacks statements`);
  }
  return {
    operation: str(doc, "operation", what),
    resource: str(doc, "resource", what),
    token: str(doc, "token", what),
    fences: fences(doc, what),
    statements: statements(doc, what),
    replayed,
    raw: doc,
  };
}

export function readResult(doc: Record<string, unknown>, what: string): ReadResult {
  if (!("statements" in doc)) {
    throw new UnexpectedResponseError(`${what}: the answer lacks statements`);
  }
  return {
    operation: str(doc, "operation", what),
    resource: str(doc, "resource", what),
    token: str(doc, "token", what),
    fence: str(doc, "fence", what),
    fences: fences(doc, what),
    statements: statements(doc, what),
    raw: doc,
  };
}

export function checkResult(doc: Record<string, unknown>, what: string): CheckResult {
  if (!Array.isArray(doc["fences"])) {
    throw new UnexpectedResponseError(`${what}: the answer lacks its fences`);
  }
  return { fences: fences(doc, what) };
}

export function batchResult(doc: Record<string, unknown>, replayed: boolean, what: string): BatchResult {
  const writes = doc["writes"];
  if (!Array.isArray(writes) || !writes.every(isObject)) {
    throw new UnexpectedResponseError(`${what}: the answer lacks its writes`);
  }
  return { writes: writes.map((w) => writeResult(w, replayed, what)), replayed };
}

function contender(v: unknown, what: string): Contender | null {
  if (v === undefined || v === null) {
    return null;
  }
  if (!isObject(v)) {
    throw new UnexpectedResponseError(`${what}: a holder is not an object`);
  }
  return { token: str(v, "token", what), ttl: int(v, "ttl", what), value: str(v, "value", what) };
}

export function lockState(doc: Record<string, unknown>, what: string): LockState {
  const holders = arr(doc, "holders", what).map((h) => {
    if (!isObject(h)) {
      throw new UnexpectedResponseError(`${what}: a holder is not an object`);
    }
    return {
      permit: int(h, "permit", what),
      resource: str(h, "resource", what),
      holder: contender(h, what) as Contender,
      transitions: int(h, "transitions", what),
    };
  });
  const waiters = arr(doc, "waiters", what)
    .map((w) => contender(w, what))
    .filter((w): w is Contender => w !== null);
  return {
    resource: str(doc, "resource", what),
    revision: int(doc, "revision", what),
    holder: contender(doc["holder"], what),
    waiters,
    waiting: int(doc, "waiting", what),
    transitions: int(doc, "transitions", what),
    permits: int(doc, "permits", what),
    holders,
  };
}

export function watchEvent(doc: Record<string, unknown>, id: string, what: string): WatchEvent {
  return {
    type: get(doc, "type", "string", what, true) as string,
    resource: str(doc, "resource", what),
    revision: int(doc, "revision", what),
    holder: contender(doc["holder"], what),
    transitions: int(doc, "transitions", what),
    permit: int(doc, "permit", what),
    id,
  };
}

// Gateway: a client of a fencegw gateway, one replica or several.

import { Agents, Bearer, type TLSOptions } from "./credentials.js";
import {
  ConfigurationError,
  FencegwError,
  LeaseError,
  LeaseLostError,
  LeaseNotFoundError,
  UnavailableError,
  UnexpectedResponseError,
} from "./errors.js";
import { Lease, type Grant, type LeaseHost, type RenewFailure, type WriteOptions } from "./lease.js";
import { LeaseSet } from "./leaseset.js";
import {
  batchResult,
  checkResult,
  lockState,
  readResult,
  writeResult,
  type BatchResult,
  type BatchWrite,
  type CheckResult,
  type LockState,
  type ReadResult,
  type WriteResult,
} from "./results.js";
import { Transport, type Answer } from "./transport.js";
import { Watch } from "./watch.js";
import {
  IDEMPOTENCY_HEADER,
  NOT_AFTER_HEADER,
  REPLAYED_HEADER,
  TOKEN_HEADER,
  decodeObject,
  encode,
  idempotencyHeader,
  newIdempotencyKey,
  notAfterHeader,
  tokenField,
  type Token,
} from "./wire.js";

// The gateway's bounds of a lease request (docs/api.md), in ms.
const MAX_TTL = 3_600_000;
const MIN_TTL = 1000;
const MAX_WAIT = 300_000;
const MAX_VALUE = 4096;
const MAX_PERMITS = 1000;
const DEFAULT_TTL = 10_000;

// A signal that never aborts, for requests nobody can stop.
const NEVER = new AbortController().signal;

export interface GatewayOptions {
  /** The token sent as `Authorization: Bearer`. */
  bearer?: string;
  /** A file holding it (a projected service account token), read again before each request when it changed. */
  bearerFile?: string;
  /** PEM files of a CA and a client certificate, for https:// replicas. */
  tls?: TLSOptions;
  /** ms each request may wait for its answer (an acquisition: its wait, and this). Default 30 s. */
  timeout?: number;
  /** Called with each keepalive that failed and will be retried, for a log line or a metric. */
  onRenewFailure?: (f: RenewFailure) => void;
}

/** Options of a lock; times in milliseconds. */
export interface LockOptions {
  /** The lease's TTL: 1 s to 1 h, sent in whole seconds rounded up. Default 10 s. */
  ttl?: number;
  /** How long the gateway may wait for the holder: up to 300 s; 0 (the default): at once, else LockedError. */
  wait?: number;
  /** The resource is a semaphore of this many permits: a free permit slot is taken. */
  permits?: number;
  /** What observers of the lock see (up to 4 KiB). */
  value?: string;
  /** What is taken off the local deadline; default max(TTL/10, 100 ms). */
  safetyMargin?: number;
  /** The acquisition's key: a new one if not given. */
  idempotencyKey?: string;
  /** Gives up the acquisition (a lease granted meanwhile is released). */
  signal?: AbortSignal;
}

export interface RevokeRequest {
  reason: string;
  resource?: string;
  leaseId?: string;
  dryRun?: boolean;
}

/**
 * A client of a fencegw gateway.
 *
 * `urls` is one base URL or several, replicas asked in the order given: a
 * request whose answer is lost (the replica down, its connection broken, a
 * 502, 503 or 504) goes to the next, which is asked first from then on,
 * when it is safe to send it again: acquisitions and writes under their
 * Idempotency-Key, and requests that write nothing. Connections are kept
 * alive per replica and reused.
 */
export class Gateway {
  private readonly transport: Transport;
  private readonly replicas: number;
  private readonly host: LeaseHost;

  constructor(urls: string | readonly string[], private readonly options: GatewayOptions = {}) {
    const timeout = options.timeout ?? 30_000;
    if (!(timeout > 0) || !Number.isFinite(timeout)) {
      throw new ConfigurationError("timeout must be more than 0 ms");
    }
    this.transport = new Transport(urls, new Bearer(options.bearer, options.bearerFile), new Agents(options.tls), timeout);
    this.replicas = typeof urls === "string" ? 1 : urls.length;
    this.host = this.leaseHost();
  }

  /** Closes the idle connections. Leases and watches still open keep theirs until they end. */
  close(): void {
    this.transport.closeIdle();
  }

  // Leases.

  /**
   * Takes the lock on resource (several: each, in canonical order, all or
   * none), runs fn with the lease and its signal, which aborts the moment
   * the lease is lost, and releases it when fn settles, within a few
   * seconds whatever the gateway does. A loss fn was never told of (no call
   * on the lease threw it) is thrown once fn returns: a loss is never
   * silent. The lock is never taken again by itself.
   */
  withLock<T>(resource: string, fn: (lease: Lease, signal: AbortSignal) => Promise<T>): Promise<T>;
  withLock<T>(resource: string, o: LockOptions, fn: (lease: Lease, signal: AbortSignal) => Promise<T>): Promise<T>;
  withLock<T>(resources: readonly string[], fn: (leases: LeaseSet, signal: AbortSignal) => Promise<T>): Promise<T>;
  withLock<T>(resources: readonly string[], o: LockOptions, fn: (leases: LeaseSet, signal: AbortSignal) => Promise<T>): Promise<T>;
  async withLock<T>(
    resources: string | readonly string[],
    a: LockOptions | ((held: never, signal: AbortSignal) => Promise<T>),
    b?: (held: never, signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const o = typeof a === "function" ? {} : a;
    const fn = (typeof a === "function" ? a : b) as (held: Lease | LeaseSet, signal: AbortSignal) => Promise<T>;
    if (typeof fn !== "function") {
      throw new ConfigurationError("withLock wants a function to run under the lock");
    }
    const held = typeof resources === "string" ? await this.acquire(resources, o) : await this.acquireAll(resources, o);
    let result: T;
    try {
      result = await fn(held, held.signal);
    } catch (e) {
      await leave(held, true);
      throw e;
    }
    await leave(held, false);
    return result;
  }

  /**
   * Takes the lock on resource (on a semaphore, `permits` of it: a free
   * permit slot) and returns the lease, kept alive until released.
   *
   * The acquisition carries an Idempotency-Key (yours, or a new one): an
   * answer lost on the way is asked for again under it, so the lease the
   * gateway granted is the one returned, never a second.
   */
  async acquire(resource: string, o: LockOptions = {}): Promise<Lease> {
    checkLockOptions(o);
    const ttl = o.ttl ?? DEFAULT_TTL;
    const wait = o.wait ?? 0;
    const body: Record<string, unknown> = { resource, ttl: Math.ceil(ttl / 1000), wait: wait / 1000 };
    if (o.value !== undefined) {
      body["value"] = o.value;
    }
    if (o.permits !== undefined) {
      body["permits"] = o.permits;
    }
    const key = o.idempotencyKey ?? newIdempotencyKey();
    const headers = { [IDEMPOTENCY_HEADER]: idempotencyHeader(key) };
    // The deadline counts from before the request: the gateway grants the
    // TTL at some later instant.
    const sent = performance.now();
    const sentWall = Date.now();
    const answer = await this.transport.request("POST", "/v1/leases", {
      body: encode(body),
      resend: true,
      want: [201],
      headers,
      timeout: this.transport.timeout + wait,
      signal: o.signal,
    });
    const grant = decodeObject(answer.body, "acquire " + resource);
    const id = grant["lease_id"];
    if (typeof id !== "string" || id === "" || typeof grant["token"] !== "string" || grant["token"] === "" || !Number.isSafeInteger(grant["ttl"]) || (grant["ttl"] as number) < 1) {
      if (typeof id === "string" && id !== "") {
        await this.releaseQuietly(id);
      }
      throw new UnexpectedResponseError(`acquire ${resource}: the 201 answer lacks lease_id, token or ttl`, { status: 201 });
    }
    let margin = o.safetyMargin;
    if (margin !== undefined && margin >= (grant["ttl"] as number) * 1000) {
      margin = undefined; // the gateway granted less than asked: its default
    }
    let from = { sent, sentWall };
    // After a long wait (or a slow answer) little may be left of the TTL
    // counted from the request, though the gateway renewed the lease while
    // it waited and when it granted the lock: a keepalive now, before the
    // deadline is armed, tells how long it really lasts. If its answer is
    // lost, the deadline stays counted from the request.
    if (performance.now() - sent >= ((grant["ttl"] as number) * 1000) / 3) {
      from = await this.renewGrant(resource, grant, from, o.signal);
    }
    const lease = new Lease(this.host, grant as unknown as Grant, resource, from.sent, from.sentWall, margin);
    try {
      lease.ensure(); // a grant that came after its whole TTL
      o.signal?.throwIfAborted();
    } catch (e) {
      await this.releaseQuietly(id);
      throw e;
    }
    lease.start();
    return lease;
  }

  /**
   * Takes a lease on each of resources, in canonical order, all or none: if
   * one cannot be had, those taken are released and its error thrown.
   */
  async acquireAll(resources: readonly string[], o: LockOptions = {}): Promise<LeaseSet> {
    const names = [...resources].sort();
    if (names.length === 0 || new Set(names).size !== names.length) {
      throw new ConfigurationError("want one or more distinct resources");
    }
    if (o.idempotencyKey !== undefined) {
      throw new ConfigurationError("an idempotency key names one acquisition, not a set's");
    }
    checkLockOptions(o);
    const taken: Lease[] = [];
    try {
      for (const name of names) {
        taken.push(await this.acquire(name, o));
      }
    } catch (e) {
      await Promise.allSettled(taken.map((l) => l.release()));
      throw e;
    }
    return new LeaseSet(this.host, taken);
  }

  /** The lock's holder and line (a semaphore's held slots), as anyone may see them: for leader election, who leads. */
  async observe(resource: string, o: { signal?: AbortSignal } = {}): Promise<LockState> {
    const answer = await this.transport.request("GET", "/v1/leases?resource=" + encodeURIComponent(resource), { resend: true, signal: o.signal });
    return lockState(decodeObject(answer.body, "observe"), "observe " + resource);
  }

  /**
   * The events of resource's lock, or of every lock under prefix, as an
   * async iterator: `for await (const ev of gw.watch("leader/reports"))`.
   * Leaving the loop (or close()) ends it.
   */
  watch(resource: string | { prefix: string }): Watch {
    let query: string;
    if (typeof resource === "string") {
      query = "resource=" + encodeURIComponent(resource);
    } else if (resource && typeof resource.prefix === "string" && resource.prefix !== "") {
      query = "prefix=" + encodeURIComponent(resource.prefix);
    } else {
      throw new ConfigurationError("watch a resource, or a prefix that is not empty");
    }
    return new Watch(this.transport, query, this.replicas);
  }

  // Writes.

  /**
   * Sends operation with args fenced by token (for an operation with several
   * resources, each role's token), for a token held some other way, such as
   * FENCING_TOKEN under `fencegw lock`. It runs under an Idempotency-Key (a
   * new one, or yours) and is sent again under it, to the next replica,
   * while its answer is lost: it applies once at most, and a retry of one
   * that did is answered with its first answer (`replayed`). A final answer,
   * applied or refused, is never sent again.
   */
  async write(operation: string, args: Record<string, unknown> | undefined, o: WriteOptions & { token: Token }): Promise<WriteResult> {
    const headers = writeHeaders(o);
    if (o.token !== "" && o.token !== undefined && o.token !== null) {
      headers[TOKEN_HEADER] = tokenField(o.token);
    }
    const answer = await this.transport.request("POST", "/v1/ops/" + encodeURIComponent(operation), {
      body: encode(args ?? {}),
      headers,
      resend: true,
      signal: o.signal,
    });
    return writeResult(decodeObject(answer.body, "write " + operation), replayed(answer), "write " + operation);
  }

  /** Sends writes in one transaction, all or none; a refusal is the refusing write's error, its `index` set. Retried as write is. */
  async batch(writes: readonly BatchWrite[], o: WriteOptions = {}): Promise<BatchResult> {
    const wire = writes.map((w) => ({ operation: w.operation, args: w.args ?? {}, token: w.token }));
    const answer = await this.transport.request("POST", "/v1/batch", {
      body: encode({ writes: wire }),
      headers: writeHeaders(o),
      resend: true,
      signal: o.signal,
    });
    return batchResult(decodeObject(answer.body, "batch"), replayed(answer), "batch");
  }

  /** A fenced read of operation (access: read): the rows only while no token is older than its fence, else StaleTokenError. */
  async read(operation: string, args: Record<string, unknown> | undefined, o: { token: Token; signal?: AbortSignal }): Promise<ReadResult> {
    const answer = await this.transport.request("POST", "/v1/reads/" + encodeURIComponent(operation), {
      body: encode(args ?? {}),
      headers: { [TOKEN_HEADER]: tokenField(o.token) },
      resend: true,
      signal: o.signal,
    });
    return readResult(decodeObject(answer.body, "read " + operation), "read " + operation);
  }

  /**
   * Is token still current for resource (or each role's token for its
   * resource: `{resources: {role: resource}}`)? StaleTokenError once a newer
   * one has written.
   */
  async check(token: Token, resource: string | { resources: Record<string, string> }, o: { signal?: AbortSignal } = {}): Promise<CheckResult> {
    const body = typeof resource === "string" ? { resource } : { resources: resource.resources };
    const answer = await this.transport.request("POST", "/v1/fences/check", {
      body: encode(body),
      headers: { [TOKEN_HEADER]: tokenField(token) },
      resend: true,
      signal: o.signal,
    });
    return checkResult(decodeObject(answer.body, "check"), "check");
  }

  // The operator's verbs (a client with operations ["*"]).

  /** Revokes the lease holding resource's lock, or leaseId, whoever owns it; NoLockError when nobody holds it. */
  async revoke(r: RevokeRequest): Promise<Record<string, unknown>> {
    const body: Record<string, unknown> = { reason: r.reason, dry_run: Boolean(r.dryRun) };
    if (r.resource !== undefined) {
      body["resource"] = r.resource;
    }
    if (r.leaseId !== undefined) {
      body["lease_id"] = r.leaseId;
    }
    const answer = await this.transport.request("POST", "/v1/admin/leases/revoke", { body: encode(body) });
    return decodeObject(answer.body, "revoke");
  }

  /** Moves resource's fence past every token issued so far (a resource never written under gets its fence row). */
  async advanceFence(resource: string, o: { reason: string; dryRun?: boolean }): Promise<Record<string, unknown>> {
    const answer = await this.transport.request("POST", "/v1/admin/fences/advance", {
      body: encode({ resource, reason: o.reason, dry_run: Boolean(o.dryRun) }),
    });
    return decodeObject(answer.body, "advance fence");
  }

  /** @internal Tests: called with each attempt's replica and path. */
  set onAttempt(f: ((replica: string, path: string) => void) | undefined) {
    this.transport.onAttempt = f;
  }

  /**
   * Renews a lease granted late, and returns when the renewal was sent, its
   * TTL put in grant; or, if its answer was lost, requested: when the
   * acquisition was.
   */
  private async renewGrant(
    resource: string,
    grant: Record<string, unknown>,
    requested: { sent: number; sentWall: number },
    signal: AbortSignal | undefined,
  ): Promise<{ sent: number; sentWall: number }> {
    const id = grant["lease_id"] as string;
    const sent = performance.now();
    const sentWall = Date.now();
    try {
      const doc = decodeObject((await this.host.keepalive(id, this.transport.timeout, signal ?? NEVER)).body, "keepalive");
      if (Number.isSafeInteger(doc["ttl"]) && (doc["ttl"] as number) >= 1) {
        grant["ttl"] = doc["ttl"];
        return { sent, sentWall };
      }
    } catch (e) {
      if (e instanceof LeaseNotFoundError) {
        throw new LeaseLostError(`acquire ${resource}: lease ${id} was gone when renewed after the wait`, { leaseId: id, resource, cause: e });
      }
      if (!(e instanceof UnavailableError)) {
        await this.releaseQuietly(id);
        throw e;
      }
    }
    return requested;
  }

  private async releaseQuietly(leaseId: string): Promise<void> {
    try {
      await this.host.release(leaseId, performance.now() + 5000);
    } catch (e) {
      if (!(e instanceof FencegwError)) {
        throw e;
      }
    }
  }

  private leaseHost(): LeaseHost {
    const t = this.transport;
    return {
      timeout: t.timeout,
      keepalive: (id, timeout, signal) => t.request("POST", leasePath(id) + "/keepalive", { timeout, signal }),
      release: async (id, deadline) => {
        await t.request("DELETE", leasePath(id), { resend: true, deadline, want: [204] });
      },
      setValue: async (id, value) => {
        await t.request("PATCH", leasePath(id), { body: encode({ value }), resend: true, want: [204] });
      },
      write: (op, args, o) => this.write(op, args, o),
      writeRoles: (op, args, o) => this.write(op, args, o),
      read: (op, args, o) => this.read(op, args, o),
      check: (token, resource) => this.check(token, resource),
      renewFailed: (f) => this.options.onRenewFailure?.(f),
    };
  }
}

/**
 * Releases held on leaving its block; unless the block is failing already,
 * throws a loss the block was never told of.
 */
async function leave(held: Lease | LeaseSet, failing: boolean): Promise<void> {
  let unreported: LeaseError | undefined = held.lossUnreported();
  try {
    await held.release();
  } catch (e) {
    if (!(e instanceof LeaseLostError)) {
      throw e;
    }
    unreported ??= e;
  }
  if (unreported !== undefined && !failing) {
    throw unreported;
  }
}

/** Refuses a lease request's options the gateway would refuse, before anything is sent. */
export function checkLockOptions(o: LockOptions): void {
  const ttl = o.ttl ?? DEFAULT_TTL;
  if (typeof ttl !== "number" || !(ttl >= MIN_TTL && ttl <= MAX_TTL)) {
    throw new ConfigurationError(`ttl is in milliseconds: ${MIN_TTL} (1 s) to ${MAX_TTL} (1 h), sent in whole seconds rounded up`);
  }
  const wait = o.wait ?? 0;
  if (typeof wait !== "number" || !(wait >= 0 && wait <= MAX_WAIT)) {
    throw new ConfigurationError(`wait is in milliseconds: 0 to ${MAX_WAIT} (300 s)`);
  }
  if (o.permits !== undefined && !(Number.isSafeInteger(o.permits) && o.permits >= 1 && o.permits <= MAX_PERMITS)) {
    throw new ConfigurationError(`permits must be an integer, 1 to ${MAX_PERMITS}`);
  }
  if (o.value !== undefined && (typeof o.value !== "string" || Buffer.byteLength(o.value) > MAX_VALUE)) {
    throw new ConfigurationError(`value must be a string of at most ${MAX_VALUE} bytes`);
  }
  const margin = o.safetyMargin;
  if (margin !== undefined && !(typeof margin === "number" && margin >= 0 && margin < Math.ceil(ttl / 1000) * 1000)) {
    throw new ConfigurationError("safetyMargin is in milliseconds: 0 or more, less than the TTL");
  }
}

function writeHeaders(o: WriteOptions): Record<string, string> {
  const headers: Record<string, string> = { [IDEMPOTENCY_HEADER]: idempotencyHeader(o.idempotencyKey ?? newIdempotencyKey()) };
  if (o.notAfter !== undefined) {
    headers[NOT_AFTER_HEADER] = notAfterHeader(o.notAfter);
  }
  return headers;
}

function leasePath(id: string): string {
  return "/v1/leases/" + encodeURIComponent(id);
}

function replayed(answer: Answer): boolean {
  return (answer.headers[REPLAYED_HEADER] ?? "").trim().toLowerCase() === "true";
}

// A lease: the lock on a resource held through the gateway, its fencing
// token, and the loop that keeps it alive.
//
// Safety: a lease is never proof that its holder still holds the lock. It
// may end on the gateway before the client notices, never the other way
// round (see `deadline`), and a process can pause at any instant, for any
// time, between a check of the lease and its write reaching PostgreSQL.
// Only the fence in the database is the guarantee; the local deadline just
// stops the client from sending writes that are obviously late.

import {
  FencegwError,
  LeaseError,
  LeaseExpiredError,
  LeaseLostError,
  LeaseNotFoundError,
  LeaseReleasedError,
  UnexpectedResponseError,
} from "./errors.js";
import type { CheckResult, ReadResult, WriteResult } from "./results.js";
import { sleep, type Answer } from "./transport.js";
import { decodeObject } from "./wire.js";

// Keepalive retry bounds after a failure that is not the gateway's "gone":
// from MIN_RETRY, doubling up to MAX_RETRY (and TTL/3), until a keepalive
// succeeds or the local deadline ends the lease.
const MIN_RETRY = 100;
const MAX_RETRY = 2000;
/** How long a release may take, all attempts included (ms). */
export const RELEASE_TIMEOUT = 5000;

/**
 * A keepalive that failed and will be retried (the gateway unreachable, a
 * 503, a proxy's page): `left` ms remain before the lease's local deadline
 * ends it.
 */
export interface RenewFailure {
  readonly resource: string;
  readonly leaseId: string;
  readonly error: unknown;
  readonly left: number;
}

/** Options of a write under a lease. */
export interface WriteOptions {
  /** The write's key: a new one if not given. Sent again under it while the answer is lost. */
  idempotencyKey?: string;
  /** The business deadline: past it, by PostgreSQL's clock, the write is refused (DeadlinePassedError). */
  notAfter?: Date;
  /** Stops waiting (and sending again): the write may have been applied. */
  signal?: AbortSignal;
}

/** What a lease needs of its gateway. */
export interface LeaseHost {
  readonly timeout: number;
  keepalive(leaseId: string, timeout: number, signal: AbortSignal): Promise<Answer>;
  release(leaseId: string, deadline: number): Promise<void>;
  setValue(leaseId: string, value: string): Promise<void>;
  write(operation: string, args: Record<string, unknown> | undefined, o: WriteOptions & { token: string }): Promise<WriteResult>;
  writeRoles(operation: string, args: Record<string, unknown> | undefined, o: WriteOptions & { token: Record<string, string> }): Promise<WriteResult>;
  read(operation: string, args: Record<string, unknown> | undefined, o: { token: string; signal?: AbortSignal }): Promise<ReadResult>;
  check(token: string, resource: string): Promise<CheckResult>;
  renewFailed(f: RenewFailure): void;
}

/** The grant of POST /v1/leases, checked. */
export interface Grant {
  lease_id: string;
  token: string;
  ttl: number; // seconds
  resource?: unknown;
  permit?: unknown;
  permits?: unknown;
}

/**
 * A lock held on `resource` (a semaphore's permit slot, `name#k`), renewed
 * every TTL/3 until it is released or lost.
 *
 * `signal` aborts the moment the lease is lost (the gateway refused a
 * keepalive, or the local deadline passed), its reason the LeaseLostError
 * (LeaseExpiredError); every call on the lease then throws it, sending
 * nothing. It is never taken again by itself.
 */
export class Lease {
  /** The gateway's lease id. */
  readonly id: string;
  /** The lock held: the name asked for, or a semaphore's slot (`pool/p1#2`). */
  readonly resource: string;
  /** The name asked for. */
  readonly name: string;
  /** A semaphore's permit slot (1 to permits); 0 for a lock. */
  readonly permit: number;
  readonly permits: number;
  /** The TTL the gateway granted last, in ms. */
  ttl: number;

  private _token: string;
  private readonly margin: number;
  private _deadline: number;
  private deadlineWall: number;
  private _error: LeaseError | undefined;
  private reported = false; // a loss was thrown to the caller
  private gone = false; // the gateway said the lease is gone
  private released = false;
  private readonly lostCtl = new AbortController();
  private readonly stopCtl = new AbortController();
  private expiry: NodeJS.Timeout | undefined;
  private readonly firstRenewal: number | undefined;

  /** @internal */
  constructor(
    private readonly host: LeaseHost,
    grant: Grant,
    name: string,
    sent: number,
    sentWall: number,
    margin: number | undefined,
  ) {
    this.id = grant.lease_id;
    this.resource = typeof grant.resource === "string" && grant.resource ? grant.resource : name;
    this.name = name;
    this.permit = Number.isSafeInteger(grant.permit) ? (grant.permit as number) : 0;
    this.permits = Number.isSafeInteger(grant.permits) ? (grant.permits as number) : 0;
    this._token = grant.token;
    this.ttl = grant.ttl * 1000;
    this.margin = margin ?? Math.max(this.ttl / 10, 100);
    // From the request, not the answer: the gateway grants the TTL at some
    // instant after the request was sent.
    this._deadline = sent + this.ttl - this.margin;
    this.deadlineWall = sentWall + this.ttl - this.margin;
    // A slow grant: little may be left of the TTL counted from the request,
    // so the first keepalive goes at once.
    this.firstRenewal = performance.now() - sent >= this.ttl / 3 ? 0 : undefined;
  }

  /** @internal Starts the keepalive loop. */
  start(): void {
    this.armExpiry();
    void this.keepAlive();
  }

  /**
   * The fencing token, E:R:SIGNATURE: a capability, keep it out of logs.
   * After a key rotation a keepalive brings it signed again: read it for
   * each write rather than once.
   */
  get token(): string {
    return this._token;
  }

  /**
   * The local deadline, a performance.now() reading: when the last successful
   * acquisition or keepalive request was sent, plus the TTL granted, less the
   * safety margin. The lease lasts on the gateway at least until then.
   */
  get deadline(): number {
    return this._deadline;
  }

  /** Aborts the moment the lease is lost; its reason is the loss. */
  get signal(): AbortSignal {
    return this.lostCtl.signal;
  }

  /** undefined while the lease lasts, then why it ended. */
  get error(): LeaseError | undefined {
    this.expireIfDue();
    return this._error;
  }

  /** Throws LeaseLostError (LeaseExpiredError) or LeaseReleasedError once the lease has ended. */
  ensure(): void {
    this.expireIfDue();
    const err = this._error;
    if (err === undefined) {
      return;
    }
    if (err instanceof LeaseLostError) {
      this.reported = true;
    }
    throw again(err);
  }

  /**
   * Sends operation with args, fenced by the lease's token, under an
   * Idempotency-Key (a new one, or yours) it sends again only while the
   * answer is lost. Sends nothing once the lease has ended. A write already
   * sent is not recalled when the lease ends: the fence decides its fate.
   */
  write(operation: string, args?: Record<string, unknown>, o: WriteOptions = {}): Promise<WriteResult> {
    try {
      this.ensure();
    } catch (e) {
      return Promise.reject(e);
    }
    return this.host.write(operation, args, { ...o, token: this._token });
  }

  /** A fenced read: rows only while no newer token has written the resource, else StaleTokenError. */
  read(operation: string, args?: Record<string, unknown>, o: { signal?: AbortSignal } = {}): Promise<ReadResult> {
    try {
      this.ensure();
    } catch (e) {
      return Promise.reject(e);
    }
    return this.host.read(operation, args, { ...o, token: this._token });
  }

  /**
   * Is the token still current? StaleTokenError once a newer one wrote. The
   * answer is already old when it arrives: the act it guards must still be
   * made safe.
   */
  check(): Promise<CheckResult> {
    try {
      this.ensure();
    } catch (e) {
      return Promise.reject(e);
    }
    return this.host.check(this._token, this.resource);
  }

  /** Publishes value as the lock's value (a leader's address), while the lease holds the lock. */
  setValue(value: string): Promise<void> {
    try {
      this.ensure();
    } catch (e) {
      return Promise.reject(e);
    }
    return this.host.setValue(this.id, value);
  }

  /**
   * Ends the lease and releases the lock on the gateway, so the next waiter
   * gets it at once. Settles within timeout ms whatever the gateway does: a
   * lease whose release is not confirmed ends with its TTL on the gateway.
   * Throws LeaseLostError if the gateway says the lease was gone while the
   * client still believed it held it (lost unnoticed); nothing after a
   * release or a loss already seen.
   */
  async release(timeout: number = RELEASE_TIMEOUT): Promise<void> {
    const end = performance.now() + timeout;
    if (this.released) {
      return;
    }
    this.released = true;
    this.expireIfDue();
    const live = this._error === undefined;
    if (live) {
      this._error = new LeaseReleasedError(`lease ${this.id} on ${this.resource} was released`, { leaseId: this.id, resource: this.resource });
    }
    this.stop();
    if (this.gone) {
      return;
    }
    try {
      await this.host.release(this.id, end);
      this.gone = true;
    } catch (e) {
      if (e instanceof LeaseNotFoundError) {
        this.gone = true;
        if (live) {
          throw new LeaseLostError(`lease ${this.id} on ${this.resource} was gone when released: lost unnoticed`, {
            leaseId: this.id,
            resource: this.resource,
            cause: e,
          });
        }
      } else if (!(e instanceof FencegwError)) {
        throw e;
      }
      // Unconfirmed: it ends with its TTL on the gateway.
    }
  }

  /** `await using lease = await gw.acquire(…)` releases it at the end of the scope. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** @internal The loss, if the caller was never told of it by a throw. */
  lossUnreported(): LeaseError | undefined {
    this.expireIfDue();
    if (this._error instanceof LeaseLostError && !this.reported) {
      this.reported = true;
      return again(this._error);
    }
    return undefined;
  }

  toString(): string {
    return `Lease(${this.id} on ${this.resource})`;
  }

  // The keepalive loop.

  private async keepAlive(): Promise<void> {
    let retry = MIN_RETRY;
    let wait = this.firstRenewal ?? this.renewIn();
    for (;;) {
      const left = this._deadline - performance.now();
      try {
        await sleep(Math.max(0, Math.min(wait, left)), this.stopCtl.signal);
      } catch {
        return; // stopped
      }
      if (this.expireIfDue()) {
        return;
      }
      try {
        await this.renew();
      } catch (e) {
        if (this.stopCtl.signal.aborted || this._error !== undefined) {
          return;
        }
        if (e instanceof LeaseNotFoundError) {
          this.gone = true;
          this.end(
            new LeaseLostError(`lease ${this.id} on ${this.resource} is gone: the gateway refused its keepalive`, {
              leaseId: this.id,
              resource: this.resource,
              cause: e,
            }),
          );
          return;
        }
        // Anything else is retried until the deadline.
        try {
          this.host.renewFailed({ resource: this.resource, leaseId: this.id, error: e, left: this._deadline - performance.now() });
        } catch {
          // the caller's hook must not stop the renewals
        }
        wait = retry;
        retry = Math.min(2 * retry, MAX_RETRY, Math.max(this.ttl / 3, MIN_RETRY));
        continue;
      }
      retry = MIN_RETRY;
      wait = this.renewIn();
    }
  }

  /** TTL/3, or half of what is left before the deadline if that is shorter (a large margin). */
  private renewIn(): number {
    return Math.max(0, Math.min(this.ttl / 3, (this._deadline - performance.now()) / 2));
  }

  private async renew(): Promise<void> {
    const sent = performance.now();
    const sentWall = Date.now();
    const left = this._deadline - sent;
    const answer = await this.host.keepalive(this.id, Math.max(50, Math.min(this.host.timeout, left)), this.stopCtl.signal);
    const doc = decodeObject(answer.body, "keepalive");
    const ttl = doc["ttl"];
    if (!Number.isSafeInteger(ttl) || (ttl as number) < 1) {
      throw new UnexpectedResponseError("keepalive: the answer has no ttl of a second or more");
    }
    if (this._error !== undefined) {
      return;
    }
    // The newest grant is the gateway's word, even if shorter.
    this.ttl = (ttl as number) * 1000;
    this._deadline = sent + this.ttl - this.margin;
    this.deadlineWall = sentWall + this.ttl - this.margin;
    this.armExpiry();
    // The same place in the order, signed again (a key rotation): anything
    // else is not this lease's token.
    const token = doc["token"];
    if (typeof token === "string" && token !== this._token && place(token) === place(this._token) && token !== place(token)) {
      this._token = token;
    }
  }

  /** Fires the loss at the deadline, even while a keepalive is under way. */
  private armExpiry(): void {
    clearTimeout(this.expiry);
    this.expiry = setTimeout(() => this.expireIfDue(), Math.max(0, this._deadline - performance.now()) + 1);
  }

  /**
   * Ends the lease if its deadline has passed. The monotonic clock decides,
   * unless the wall clock says so first: the monotonic clock stops while the
   * machine is suspended, the lease's TTL on the gateway does not, and a
   * wall clock stepped forward can only end the lease early, which is safe.
   */
  private expireIfDue(): boolean {
    if (this._error !== undefined) {
      return true;
    }
    if (performance.now() < this._deadline && Date.now() < this.deadlineWall) {
      return false;
    }
    this.end(
      new LeaseExpiredError(`lease ${this.id} on ${this.resource} passed its local deadline without a successful keepalive`, {
        leaseId: this.id,
        resource: this.resource,
      }),
    );
    return true;
  }

  private end(err: LeaseError): void {
    if (this._error !== undefined) {
      return;
    }
    this._error = err;
    this.stop();
    this.lostCtl.abort(err);
  }

  private stop(): void {
    clearTimeout(this.expiry);
    this.stopCtl.abort();
  }
}

/** A new instance like err, to throw once more with a stack of its own. */
function again(err: LeaseError): LeaseError {
  const ctor = err.constructor as new (message: string, o: { leaseId: string; resource: string; cause?: unknown }) => LeaseError;
  return new ctor(err.message, { leaseId: err.leaseId, resource: err.resource, cause: err.cause });
}

function place(token: string): string {
  const parts = token.split(":");
  return parts.slice(0, 2).join(":");
}

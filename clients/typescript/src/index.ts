/**
 * fencegw: the TypeScript client of the fencegw gateway.
 *
 * Hold a lock and write under its fencing token:
 *
 * ```ts
 * import { Gateway, StaleTokenError } from "fencegw";
 *
 * const gw = new Gateway(["http://gw1:8080", "http://gw2:8080"], { bearerFile: "/var/run/secrets/fencegw" });
 * await gw.withLock("account/acct-1", { ttl: 30_000, wait: 10_000 }, async (lease, signal) => {
 *   await lease.write("debit", { account: "acct-1", amount_cents: 100 });
 * });
 * ```
 *
 * The lease renews itself every TTL/3; once it is lost, `signal` aborts and
 * the next call on the lease throws LeaseLostError, sending nothing. Still,
 * a frozen process outlives any local check: only the fence in the database
 * refuses its late write (StaleTokenError). No run-time dependency beyond
 * Node's own modules.
 *
 * @module
 */

export * from "./errors.js";
export { Gateway, checkLockOptions, type GatewayOptions, type LockOptions, type RevokeRequest } from "./gateway.js";
export { Lease, RELEASE_TIMEOUT, type RenewFailure, type WriteOptions } from "./lease.js";
export { LeaseSet } from "./leaseset.js";
export type {
  BatchResult,
  BatchWrite,
  CheckResult,
  Contender,
  Fence,
  LockState,
  PermitHolder,
  ReadResult,
  Row,
  Statement,
  WatchEvent,
  WatchEventType,
  WriteResult,
} from "./results.js";
export type { TLSOptions } from "./credentials.js";
export { Watch } from "./watch.js";
export { VERSION } from "./version.js";
export { newIdempotencyKey, unsigned, type Token } from "./wire.js";

// Several leases held together, for a write fenced on several resources (a
// transfer's two accounts).

import { ConfigurationError, LeaseLostError, type LeaseError } from "./errors.js";
import { RELEASE_TIMEOUT, type Lease, type LeaseHost, type WriteOptions } from "./lease.js";
import type { WriteResult } from "./results.js";

/**
 * Leases taken in canonical order (by resource name), all or none, so that
 * two clients wanting overlapping sets never hold one each while waiting
 * for the other's. `signal` aborts as soon as any lease of the set is lost;
 * then every call throws its loss.
 */
export class LeaseSet {
  readonly leases: readonly Lease[];
  private readonly lostCtl = new AbortController();

  /** @internal */
  constructor(
    private readonly host: LeaseHost,
    leases: readonly Lease[],
  ) {
    this.leases = [...leases];
    for (const l of this.leases) {
      const onLost = (): void => this.lostCtl.abort(l.signal.reason);
      if (l.signal.aborted) {
        onLost();
      } else {
        l.signal.addEventListener("abort", onLost, { once: true });
      }
    }
  }

  /** Aborts as soon as any lease of the set is lost; its reason is that loss. */
  get signal(): AbortSignal {
    return this.lostCtl.signal;
  }

  /** The lease on resource (as asked, or a permit's slot), or undefined. */
  lease(resource: string): Lease | undefined {
    return this.leases.find((l) => l.resource === resource || l.name === resource);
  }

  /** undefined while every lease lasts, then the first one's end. */
  get error(): LeaseError | undefined {
    for (const l of this.leases) {
      const err = l.error;
      if (err !== undefined) {
        return err;
      }
    }
    return undefined;
  }

  /** Throws the first lease's loss (or release) once any has ended. */
  ensure(): void {
    for (const l of this.leases) {
      l.ensure();
    }
  }

  /**
   * Sends operation fenced by the set's tokens: roles maps each role of the
   * operation to the resource of the set that plays it, e.g.
   * `{from: "account/acct-1", to: "account/acct-2"}`.
   */
  write(operation: string, args: Record<string, unknown> | undefined, o: WriteOptions & { roles: Record<string, string> }): Promise<WriteResult> {
    const tokens: Record<string, string> = {};
    try {
      this.ensure();
      for (const [role, resource] of Object.entries(o.roles)) {
        const l = this.lease(resource);
        if (l === undefined) {
          throw new ConfigurationError(`role ${role}'s resource ${resource} is not in the set`);
        }
        tokens[role] = l.token;
      }
    } catch (e) {
      return Promise.reject(e);
    }
    const { roles: _roles, ...rest } = o;
    return this.host.writeRoles(operation, args, { ...rest, token: tokens });
  }

  /**
   * Releases every lease, all within timeout ms; throws the first
   * LeaseLostError a release found (a loss unnoticed).
   */
  async release(timeout: number = RELEASE_TIMEOUT): Promise<void> {
    const results = await Promise.allSettled(this.leases.map((l) => l.release(timeout)));
    for (const r of results) {
      if (r.status === "rejected" && r.reason instanceof LeaseLostError) {
        throw r.reason;
      }
    }
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** @internal */
  lossUnreported(): LeaseError | undefined {
    for (const l of this.leases) {
      const err = l.lossUnreported();
      if (err !== undefined) {
        return err;
      }
    }
    return undefined;
  }

  toString(): string {
    return `LeaseSet(${this.leases.map((l) => l.resource).join(", ")})`;
  }
}

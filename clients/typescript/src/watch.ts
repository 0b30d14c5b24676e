// A watch of locks: an async iterator of events that resumes a broken
// stream with Last-Event-ID, so that no change is missed.

import type { IncomingMessage } from "node:http";

import { FencegwError, ProblemError, UnexpectedResponseError } from "./errors.js";
import { watchEvent, type WatchEvent } from "./results.js";
import { SSEParser, type Message } from "./sse.js";
import { sleep, type Transport } from "./transport.js";

// Reconnection backoff of a broken stream (ms).
const RETRY_MIN = 100;
const RETRY_MAX = 5000;
// A stream silent this long is dead: the gateway sends a heartbeat every
// 15 s.
const READ_TIMEOUT = 45_000;

/** Would the gateway refuse the watch again? A 4xx but 408 and 429. */
export function final(err: unknown): boolean {
  if (err instanceof ProblemError) {
    return err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429;
  }
  return err instanceof UnexpectedResponseError && err.status >= 400 && err.status < 500;
}

/**
 * Events of the locks watched: the state of each, `synced`, then every
 * change in etcd's order. A stream that breaks (a replica restarted, a
 * proxy's timeout, a stream cut mid-event) is resumed after the last event
 * handed on, with Last-Event-ID. A refusal of the first request is thrown by
 * the first `next()`, as is a later refusal for good (403, 400), which ends
 * the watch. `close()` (or `break` out of `for await`) ends it.
 */
export class Watch implements AsyncIterableIterator<WatchEvent> {
  private lastId: string | undefined;
  private res: IncomingMessage | undefined;
  private chunks: AsyncIterator<Buffer> | undefined;
  private parser = new SSEParser();
  private pending: Message[] = [];
  private readonly closeCtl = new AbortController();
  private retry = RETRY_MIN;
  private opened = false;

  /** @internal */
  constructor(
    private readonly transport: Transport,
    private readonly query: string,
    private readonly replicas: number,
  ) {}

  /** The id the watch resumes after. */
  get lastEventId(): string | undefined {
    return this.lastId;
  }

  get closed(): boolean {
    return this.closeCtl.signal.aborted;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<WatchEvent, undefined>> {
    for (;;) {
      if (this.closed) {
        return { done: true, value: undefined };
      }
      const m = this.pending.shift();
      if (m !== undefined) {
        const ev = this.event(m);
        if (ev !== undefined) {
          this.retry = RETRY_MIN;
          return { done: false, value: ev };
        }
        continue;
      }
      if (this.chunks === undefined) {
        await this.connect();
        continue;
      }
      let chunk: Buffer | undefined;
      try {
        const r = await this.chunks.next();
        chunk = r.done ? undefined : r.value;
      } catch {
        chunk = undefined;
      }
      if (chunk === undefined || chunk.length === 0) {
        if (chunk === undefined) {
          this.drop();
        }
        continue;
      }
      try {
        this.pending.push(...this.parser.feed(chunk));
      } catch {
        this.drop();
      }
    }
  }

  async return(): Promise<IteratorResult<WatchEvent, undefined>> {
    this.close();
    return { done: true, value: undefined };
  }

  /** Ends the watch; a next() under way returns done. */
  close(): void {
    this.closeCtl.abort();
    this.drop();
  }

  [Symbol.asyncDispose](): Promise<void> {
    this.close();
    return Promise.resolve();
  }

  private async connect(): Promise<void> {
    if (this.opened) {
      try {
        await sleep(this.retry, this.closeCtl.signal);
      } catch {
        return; // closed
      }
      this.retry = Math.min(2 * this.retry, RETRY_MAX);
    }
    // The first request tries each replica once before it gives up; later
    // ones are retried for ever, but for a refusal for good.
    const tries = this.opened ? 1 : this.replicas;
    for (let i = 1; ; i++) {
      try {
        await this.open();
        this.opened = true;
        return;
      } catch (e) {
        if (this.closed) {
          return;
        }
        if (final(e) || (!this.opened && i >= tries) || !(e instanceof FencegwError)) {
          this.close();
          throw e;
        }
        if (this.opened) {
          return;
        }
      }
    }
  }

  private async open(): Promise<void> {
    const headers: Record<string, string> = {};
    if (this.lastId !== undefined) {
      headers["last-event-id"] = this.lastId;
    }
    const res = await this.transport.openStream("/v1/leases/watch?" + this.query, headers, this.closeCtl.signal);
    if (this.closed) {
      res.destroy();
      return;
    }
    res.setTimeout(READ_TIMEOUT, () => res.destroy());
    res.on("error", () => {}); // read through the iterator
    this.res = res;
    this.chunks = res[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    this.parser = new SSEParser();
    this.pending = [];
  }

  private drop(): void {
    const res = this.res;
    this.res = undefined;
    this.chunks = undefined;
    this.pending = [];
    res?.destroy();
  }

  /**
   * The event of m, or undefined: an id alone moves the id to resume after
   * (every change up to it was sent); an event that is not one breaks the
   * stream, resumed after the last good one.
   */
  private event(m: Message): WatchEvent | undefined {
    if (!m.data && !m.event) {
      if (m.id !== undefined) {
        this.lastId = m.id;
      }
      return undefined;
    }
    let ev: WatchEvent;
    try {
      const doc: unknown = JSON.parse(m.data);
      if (typeof doc !== "object" || doc === null || Array.isArray(doc) || (doc as Record<string, unknown>)["type"] !== m.event) {
        throw new Error("not an event of its type");
      }
      ev = watchEvent(doc as Record<string, unknown>, m.id ?? "", "watch");
    } catch {
      this.drop();
      return undefined;
    }
    if (m.id !== undefined) {
      this.lastId = m.id; // handed on now: a resumed stream starts after it
    }
    return ev;
  }
}

// A watch resumes a stream that stops (mid-event too) after the last event
// it handed on, ends on a refusal for good, and on close.

import assert from "node:assert/strict";
import { after, describe, it } from "node:test";

import * as fencegw from "../src/index.js";
import { gate, problem, serve, type FakeGateway, type Reply } from "./fakegw.js";

const HEAD = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";

function event(id: number | undefined, type: string, revision: number, more: Record<string, unknown> = {}): string {
  const head = id !== undefined ? `id: ${id}\n` : "";
  return `${head}event: ${type}\ndata: ${JSON.stringify({ type, resource: "job/w", revision, ...more })}\n\n`;
}

const FIRST =
  HEAD +
  ": hello\n\n" +
  event(undefined, "state", 5, { holder: null }) +
  event(5, "synced", 5) +
  event(6, "granted", 6, { holder: { token: "1:6", value: "" }, transitions: 1 }) +
  'id: 7\nevent: released\ndata: {"type":"rel'; // stops mid-event
const SECOND = HEAD + event(7, "released", 7, { holder: { token: "1:6" } }) + "id: 8\n\n" + "id: 9\nevent: granted\ndata: not json\n\n"; // an event that is none: resumed after 8
const THIRD = HEAD + event(9, "granted", 9, { holder: { token: "1:9" }, transitions: 2 });

const fakes: FakeGateway[] = [];
after(async () => {
  await Promise.all(fakes.map((f) => f.stop()));
});

async function fake(streams: Reply[]): Promise<FakeGateway> {
  const f = await serve(() => streams.shift() ?? problem("forbidden", 403, { detail: "outside the client's scope" }));
  fakes.push(f);
  return f;
}

describe("watch", () => {
  it("resumes after the last event handed on, and ends on a refusal for good", async () => {
    const f = await fake([{ raw: FIRST }, { raw: SECOND }, { raw: THIRD }]);
    const w = new fencegw.Gateway(f.url, { timeout: 5000 }).watch("job/w");
    const got: [string, number][] = [];
    await assert.rejects(
      (async () => {
        for await (const ev of w) {
          got.push([ev.type, ev.revision]);
        }
      })(),
      fencegw.ForbiddenError,
    );
    assert.deepEqual(got, [["state", 5], ["synced", 5], ["granted", 6], ["released", 7], ["granted", 9]]);
    assert.deepEqual(f.requests.map((r) => r.headers["last-event-id"]), [undefined, "6", "8", "9"]);
    assert.deepEqual(await w.next(), { done: true, value: undefined }, "a watch refused for good goes on");
  });

  it("throws the first request's refusal from the first next()", async () => {
    const f = await fake([]);
    const gw = new fencegw.Gateway(f.url, { timeout: 5000 });
    await assert.rejects(gw.watch("job/w").next(), fencegw.ForbiddenError);
    assert.throws(() => gw.watch({ prefix: "" }), fencegw.ConfigurationError);
  });

  it("fails over on the first request to a replica that answers", async () => {
    const f = await fake([{ raw: HEAD + event(5, "synced", 5) }]);
    const down = await fake([{ raw: "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n" }]);
    const w = new fencegw.Gateway([down.url, f.url], { timeout: 5000 }).watch("job/w");
    const first = await w.next();
    assert.equal(first.value?.type, "synced");
    w.close();
  });

  it("ends a next() under way when closed, and when the loop is left", async () => {
    const done = gate();
    const f = await fake([{ raw: HEAD + event(5, "synced", 5), thenHold: done.promise }, { raw: HEAD + event(5, "synced", 5), thenHold: done.promise }]);
    const gw = new fencegw.Gateway(f.url, { timeout: 5000 });
    const w = gw.watch("job/w");
    assert.equal((await w.next()).value?.type, "synced");
    const pending = w.next();
    w.close();
    assert.deepEqual(await pending, { done: true, value: undefined });
    for await (const ev of gw.watch("job/w")) {
      assert.equal(ev.type, "synced");
      break; // closes it
    }
    done.open();
    assert.equal(f.requests.length, 2, "a closed watch reconnected");
  });
});

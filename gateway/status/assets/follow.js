// The status page's follower of GET /v1/leases/watch?all=true: the locks
// held, kept up to date from the watch's events, and the newest changes.
// EventSource cannot send an Authorization header, and a token must never
// go into a URL, so the stream is read with fetch() and parsed here
// (the Server-Sent Events format, as the gateway writes it).
"use strict";

(() => {
  const CHANGES_KEPT = 20;
  // Heartbeats come every 15 s: a stream silent for three of them is
  // dead, whatever the socket says.
  const SILENCE_MS = 45000;
  const RETRY_MIN_MS = 1000;
  const RETRY_MAX_MS = 30000;

  // followLocks starts following; bearer() is the token to send (or
  // null), onUpdate(view) is called after each change of what it knows.
  // view: {synced, locks: Map resource → {token, value, ttl, transitions,
  // revision, at}, changes: newest first, state: a sentence, live}.
  function followLocks(bearer, onUpdate) {
    let locks = new Map();
    let staging = null; // the state being read: replaces locks at synced
    let synced = false;
    let changes = [];
    let lastEventId = "";
    let state = "connecting to the watch…";
    let live = false;
    let generation = 0;
    let abort = null;
    let retryMs = RETRY_MIN_MS;
    let retryTimer = 0;

    const update = () => onUpdate({ synced, locks, changes, state, live });

    function setState(text, isLive) {
      state = text;
      live = isLive;
      update();
    }

    // handle applies one dispatched event.
    function handle(type, data) {
      let ev;
      try {
        ev = JSON.parse(data);
      } catch (err) {
        return; // not an event of this gateway's: nothing to apply
      }
      const at = performance.now();
      switch (type) {
        case "relist":
          // etcd compacted past the last event seen: what the page knew
          // is void; the state follows.
          staging = new Map();
          synced = false;
          setState("re-reading the locks (etcd compacted past this page's last event)", false);
          return;
        case "state":
          if (staging === null) staging = new Map();
          if (ev.holder) staging.set(ev.resource, lockOf(ev, at, ev.holder.ttl));
          return;
        case "synced":
          locks = staging || new Map();
          staging = null;
          synced = true;
          retryMs = RETRY_MIN_MS;
          setState("following every lock, revision " + ev.revision, true);
          return;
        case "granted":
        case "value":
          locks.set(ev.resource, lockOf(ev, at, null));
          break;
        case "released":
        case "expired":
        case "revoked":
        case "ended": {
          const held = locks.get(ev.resource);
          if (held && ev.holder && held.token === ev.holder.token) locks.delete(ev.resource);
          break;
        }
        default:
          return;
      }
      if (type !== "value") {
        changes = [{ type, resource: ev.resource, token: ev.holder ? ev.holder.token : "", transitions: ev.transitions, revision: ev.revision, at }, ...changes].slice(0, CHANGES_KEPT);
      }
      state = "following every lock, revision " + ev.revision;
      live = true;
      update();
    }

    function lockOf(ev, at, ttl) {
      return { token: ev.holder.token, value: ev.holder.value || "", ttl: ttl || null, transitions: ev.transitions, revision: ev.revision, at };
    }

    // read parses the stream (text/event-stream: lines of field: value,
    // an event ends at a blank line) until it ends.
    async function read(body, mine, ctrl) {
      const reader = body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      let type = "";
      let data = [];
      let silence = setTimeout(() => ctrl.abort(), SILENCE_MS);
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done || mine !== generation) return;
          clearTimeout(silence);
          silence = setTimeout(() => ctrl.abort(), SILENCE_MS);
          buffer += value;
          const lines = buffer.split(/\r\n|\r|\n/);
          buffer = lines.pop(); // the rest of a line not yet ended
          for (const line of lines) {
            if (line === "") {
              if (data.length > 0) handle(type || "message", data.join("\n"));
              type = "";
              data = [];
              continue;
            }
            if (line.startsWith(":")) continue; // heartbeat, progress
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            let val = colon < 0 ? "" : line.slice(colon + 1);
            if (val.startsWith(" ")) val = val.slice(1);
            if (field === "event") type = val;
            else if (field === "data") data.push(val);
            else if (field === "id" && !val.includes("\0")) lastEventId = val; // with or without data, as EventSource does
          }
        }
      } finally {
        clearTimeout(silence);
      }
    }

    function retry(mine, why) {
      if (mine !== generation) return;
      setState(why + "; following again in " + Math.round(retryMs / 1000) + " s", false);
      clearTimeout(retryTimer);
      retryTimer = setTimeout(() => connect(mine), retryMs);
      retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
    }

    async function connect(mine) {
      if (mine !== generation) return;
      const headers = { Accept: "text/event-stream" };
      const token = bearer();
      if (token) headers.Authorization = "Bearer " + token;
      // Resumed: the changes after it, no state, and the locks known
      // stay. Afresh: the state replaces them.
      if (lastEventId) headers["Last-Event-ID"] = lastEventId;
      else staging = new Map();
      const ctrl = new AbortController();
      abort = ctrl;
      let resp;
      try {
        resp = await fetch("v1/leases/watch?all=true", { headers, cache: "no-store", signal: ctrl.signal });
      } catch (err) {
        retry(mine, "the watch could not connect (" + err.name + ")");
        return;
      }
      if (mine !== generation) return;
      if (resp.status === 401 || resp.status === 403) {
        // The token is missing or may not see every lock: no retry until
        // another token is given (restart). The locks are polled.
        synced = false;
        lastEventId = "";
        setState("not following the locks: the watch answered " + resp.status + "; they are polled", false);
        return;
      }
      if (resp.status === 400) {
        // A Last-Event-ID this etcd has not issued (etcd restored from a
        // backup): start again from the state.
        lastEventId = "";
        synced = false;
      }
      if (!resp.ok) {
        retry(mine, "the watch answered " + resp.status);
        return;
      }
      try {
        await read(resp.body, mine, ctrl);
      } catch (err) {
        retry(mine, "the watch broke (" + err.name + ")");
        return;
      }
      retry(mine, "the watch ended");
    }

    // restart drops what is known and follows afresh: another token was
    // given, or none.
    function restart() {
      const mine = ++generation;
      if (abort) abort.abort();
      clearTimeout(retryTimer);
      locks = new Map();
      staging = null;
      synced = false;
      changes = [];
      lastEventId = "";
      retryMs = RETRY_MIN_MS;
      setState("connecting to the watch…", false);
      connect(mine);
    }

    restart();
    return { restart };
  }

  window.fencegwFollowLocks = followLocks;
})();

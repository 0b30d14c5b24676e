// The status page: polls /v1/status and draws it, and draws the locks
// from the watch follow.js keeps (polled ones while it is not synced).
// Everything read from the gateway (resource names, lease values, bypass reasons: text clients and
// operators chose) goes into the page as textContent, never as markup.
"use strict";

(() => {
  const REFRESH_MS = 2000;
  const FETCH_TIMEOUT_MS = 10000;
  const TOKEN_KEY = "fencegw.status.bearer";
  const CHART = { width: 600, height: 170, left: 44, right: 8, top: 10, bottom: 22 };
  const SVG_NS = "http://www.w3.org/2000/svg";
  // The watch knows every lock: the page shows this many.
  const LOCK_ROWS = 100;

  const $ = (id) => document.getElementById(id);

  // The view shown, and when it arrived on this page's monotonic clock:
  // TTLs and ages count from there, so the browser's wall clock, however
  // wrong, does not matter.
  let shown = null;
  let receivedAt = 0;
  let timer = 0;
  // Each refresh bumps it; an answer to an older one is dropped, so a
  // token given while a poll is in flight does not start a second loop.
  let generation = 0;
  // What the watch knows (follow.js), and what the last poll said of the
  // locks it read: resource → {token, client, waiters, deadline}.
  let followed = null;
  let polled = new Map();
  let locksDrawn = 0;

  // serverNow is the gateway's time now, as far as the last view says.
  function serverNow() {
    return Date.parse(shown.at) + shown.age_seconds * 1000 + (performance.now() - receivedAt);
  }

  function ago(at) {
    const s = Math.max(0, Math.round((serverNow() - Date.parse(at)) / 1000));
    if (s < 120) return s + " s ago";
    if (s < 7200) return Math.round(s / 60) + " min ago";
    return Math.round(s / 3600) + " h ago";
  }

  function cell(text, className) {
    const td = document.createElement("td");
    td.className = className;
    td.textContent = text;
    return td;
  }

  function whenCell(at, cls) {
    const td = cell(ago(at), cls || "when");
    td.title = new Date(at).toISOString();
    return td;
  }

  // fill draws one list of a section, or says why it is missing.
  function fill(id, rows, source, toCells, extra) {
    const section = $(id);
    const body = section.querySelector("tbody");
    const down = section.querySelector(".unavailable");
    const empty = section.querySelector(".empty");
    const count = section.querySelector(".count");
    if (rows === null || rows === undefined) {
      const name = section.dataset.source === "etcd" ? "etcd" : "PostgreSQL";
      down.textContent = name + " " + (source || "unavailable") + ": this list cannot be shown now.";
      down.hidden = false;
      empty.hidden = true;
      count.textContent = "";
      body.replaceChildren();
      return;
    }
    down.hidden = true;
    empty.hidden = rows.length > 0;
    count.textContent = "(" + rows.length + (extra || "") + ")";
    body.replaceChildren(...rows.map((r) => {
      const tr = document.createElement("tr");
      tr.append(...toCells(r, tr));
      return tr;
    }));
  }

  // ttlCell counts down to deadline (when the lease ends, on this page's
  // clock), or shows "–" while no TTL is known (a grant the watch told of,
  // before the next poll reads its TTL).
  function ttlCell(deadline) {
    const td = cell("–", "ttl");
    if (deadline === null) return td;
    td.dataset.deadline = String(deadline);
    tickTTL(td);
    return td;
  }

  // pollLocks keeps what a poll said of each lock, for the watch's rows.
  function pollLocks(v) {
    polled = new Map((v.locks || []).map((l) => [l.resource, {
      token: l.holder_token, client: l.holder_client, waiters: l.waiters,
      deadline: receivedAt + (l.ttl - v.age_seconds) * 1000,
    }]));
  }

  function drawLocks() {
    locksDrawn = 0;
    const section = $("locks");
    const following = followed !== null && followed.synced;
    section.dataset.from = following ? "watch" : "poll";
    if (followed !== null) {
      $("follow-state").textContent = followed.state;
      $("follow-state").className = "follow" + (followed.live ? " live" : "");
      fill("changes", followed.changes, "ok", (c) => [
        cell(Math.round((performance.now() - c.at) / 1000) + " s ago", "when"),
        cell(c.type, "event " + c.type),
        cell(c.resource, "resource"),
        cell(c.token, "token"),
        cell(String(c.transitions), "transitions"),
        cell(String(c.revision), "revision"),
      ]);
    }
    if (!following) {
      if (shown === null) return;
      fill("locks", shown.locks, shown.sources.etcd, (l) => [
        cell(l.resource, "resource"),
        cell(l.holder_token, "holder"),
        cell(l.holder_client, "client"),
        ttlCell(polled.get(l.resource).deadline),
        cell(String(l.waiters), "waiters"),
        cell(String(l.transitions), "transitions"),
        cell(l.value || "", "value"),
      ], shown.locks_truncated ? ", more not shown" : "");
      return;
    }
    const all = [...followed.locks].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const rows = all.slice(0, LOCK_ROWS);
    fill("locks", rows, "ok", ([resource, l], tr) => {
      // The poll's client, waiters and TTL, if it saw this holder.
      const p = polled.get(resource);
      const same = p !== undefined && p.token === l.token ? p : null;
      let deadline = same ? same.deadline : null;
      if (deadline === null && l.ttl !== null) deadline = l.at + l.ttl * 1000;
      tr.dataset.revision = String(l.revision); // the watch event that drew it
      return [
        cell(resource, "resource"),
        cell(l.token, "holder"),
        cell(same ? same.client : "", "client"),
        ttlCell(deadline),
        cell(same ? String(same.waiters) : "", "waiters"),
        cell(String(l.transitions), "transitions"),
        cell(l.value, "value"),
      ];
    }, all.length > rows.length ? " of " + all.length : "");
  }

  // Watch events come in bursts: one drawing for each burst.
  function scheduleLocks() {
    if (locksDrawn === 0) locksDrawn = setTimeout(drawLocks, 0);
  }

  function tickTTL(td) {
    const left = Math.max(0, Math.ceil((Number(td.dataset.deadline) - performance.now()) / 1000));
    td.textContent = left > 0 ? left + " s" : "expiring";
    td.classList.toggle("low", left <= 3);
  }

  function source(id, state) {
    const dd = $(id);
    dd.textContent = state === "ok" ? "ok" : state || "unknown";
    dd.className = state === "ok" ? "ok" : "bad";
  }

  function render(v) {
    $("epoch").textContent = String(v.authority.epoch);
    $("revision").textContent = String(v.authority.etcd_revision);
    const halted = $("halted");
    halted.textContent = v.authority.halted ? "HALTED: " + v.authority.reason : "in service";
    halted.className = v.authority.halted ? "bad" : "ok";
    source("source-postgres", v.sources.postgres);
    source("source-etcd", v.sources.etcd);

    pollLocks(v);
    drawLocks();
    fill("fences", v.fences, v.sources.postgres, (f) => [
      cell(f.resource, "resource"),
      cell(f.token, "token"),
      cell(String(f.writes), "writes"),
      whenCell(f.updated_at),
    ]);
    fill("rejections", v.rejections, v.sources.postgres, (r) => [
      whenCell(r.at),
      cell(r.client || "", "client"),
      cell(r.resource, "resource"),
      cell(r.operation, "operation"),
      cell(r.reason, "reason"),
      cell(r.presented || "", "presented"),
      cell(r.current || "", "current"),
      cell(String(r.count), "refusals"),
      whenCell(r.first_at, "since"),
      cell(r.remote_addr || "", "remote"),
      cell(r.request_id || "", "request"),
    ]);
    fill("bypasses", v.bypasses, v.sources.postgres, (b) => [
      whenCell(b.at),
      cell(b.by, "by"),
      cell(String(b.txid), "txid"),
      cell(b.why, "why"),
    ]);
    fill("history", v.history, v.sources.postgres, (e) => [
      whenCell(e.at),
      cell(e.resource, "resource"),
      cell(e.event, "event"),
      cell(e.client || "", "client"),
      cell(e.token || "", "token"),
      cell(e.lease_id || "", "lease"),
      cell(e.actor || "", "by"),
      cell(e.reason || "", "reason"),
    ]);
    chart(v.rates);
  }

  function svg(name, attrs, text) {
    const el = document.createElementNS(SVG_NS, name);
    for (const [k, val] of Object.entries(attrs)) el.setAttribute(k, String(val));
    if (text !== undefined) el.textContent = text;
    return el;
  }

  // niceCeiling rounds a rate up to 1, 2 or 5 times a power of ten.
  function niceCeiling(x) {
    if (x <= 1) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(x)));
    for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
    return 10 * p;
  }

  function formatRate(r) {
    return (r >= 10 ? r.toFixed(0) : r.toFixed(1)) + "/s";
  }

  function chart(rates) {
    const box = $("chart");
    const { width, height, left, right, top, bottom } = CHART;
    const samples = rates.samples || [];
    const perSecond = (n) => n / rates.interval_seconds;
    const windowMs = 300 * 1000;
    const end = serverNow();
    const top1 = niceCeiling(Math.max(0, ...samples.map((s) => Math.max(perSecond(s.writes), perSecond(s.refusals)))));
    const x = (at) => left + (width - left - right) * (1 - (end - Date.parse(at)) / windowMs);
    const y = (r) => top + (height - top - bottom) * (1 - r / top1);

    const parts = [
      svg("line", { class: "axis", x1: left, y1: y(0), x2: width - right, y2: y(0) }),
      svg("line", { class: "axis", x1: left, y1: y(top1), x2: width - right, y2: y(top1) }),
      svg("text", { class: "label", x: left - 4, y: y(top1) + 4, "text-anchor": "end" }, formatRate(top1)),
      svg("text", { class: "label", x: left - 4, y: y(0) + 4, "text-anchor": "end" }, "0"),
      svg("text", { class: "label", x: left, y: height - 4 }, "5 min ago"),
      svg("text", { class: "label", x: width - right, y: height - 4, "text-anchor": "end" }, "now"),
    ];
    const inWindow = samples.filter((s) => end - Date.parse(s.at) <= windowMs);
    if (inWindow.length === 0) {
      parts.push(svg("text", { class: "label", x: width / 2, y: height / 2, "text-anchor": "middle" },
        "no samples yet: the gateway counts every " + rates.interval_seconds + " s"));
    }
    for (const kind of ["writes", "refusals"]) {
      const points = inWindow.map((s) => x(s.at).toFixed(1) + "," + y(perSecond(s[kind])).toFixed(1));
      if (points.length === 1) points.unshift((x(inWindow[0].at) - 4).toFixed(1) + "," + points[0].split(",")[1]);
      if (points.length > 0) parts.push(svg("polyline", { class: kind, points: points.join(" ") }));
    }
    box.replaceChildren(...parts);
    const last = inWindow[inWindow.length - 1];
    $("rate-writes").textContent = last ? formatRate(perSecond(last.writes)) : "–";
    $("rate-refusals").textContent = last ? formatRate(perSecond(last.refusals)) : "–";
  }

  function setState(text, live) {
    const state = $("state");
    state.textContent = text;
    state.className = "state " + (live ? "live" : "problem");
    $("board").classList.toggle("stale", !live);
  }

  function askForToken(message) {
    $("auth-message").textContent = message;
    $("auth").hidden = false;
    $("board").hidden = true;
    $("auth-token").focus();
  }

  async function refresh() {
    clearTimeout(timer);
    const mine = ++generation;
    const token = sessionStorage.getItem(TOKEN_KEY);
    $("forget").hidden = !token;
    const headers = token ? { Authorization: "Bearer " + token } : {};
    const abort = new AbortController();
    const giveUp = setTimeout(() => abort.abort(), FETCH_TIMEOUT_MS);
    let resp;
    try {
      resp = await fetch("v1/status", { headers, cache: "no-store", signal: abort.signal });
    } catch (err) {
      if (mine !== generation) return;
      setState("gateway unreachable (" + err.name + "); showing what it last said", false);
      timer = setTimeout(refresh, REFRESH_MS);
      return;
    } finally {
      clearTimeout(giveUp);
    }
    if (mine !== generation) return;
    if (resp.status === 401) {
      setState("401 Unauthorized: a bearer token is needed", false);
      askForToken(token
        ? "401 Unauthorized: the gateway refused this bearer token. Enter a client's token from the policy."
        : "401 Unauthorized: this gateway's policy declares clients, so its status needs a client's bearer token. " +
          "It is kept in this tab only (sessionStorage).");
      return; // until a token is given
    }
    if (!resp.ok) {
      setState("the gateway answered " + resp.status + "; showing what it last said", false);
      timer = setTimeout(refresh, REFRESH_MS);
      return;
    }
    try {
      const view = await resp.json();
      if (mine !== generation) return;
      shown = view;
      receivedAt = performance.now();
      $("auth").hidden = true;
      $("board").hidden = false;
      render(shown);
      setState("live, updated " + new Date(shown.at).toLocaleTimeString(), true);
    } catch (err) {
      setState("could not read the gateway's answer (" + err.name + ")", false);
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }

  $("auth").addEventListener("submit", (e) => {
    e.preventDefault();
    const token = $("auth-token").value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    $("auth-token").value = "";
    refresh();
    follower.restart();
  });
  $("forget").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    refresh();
    follower.restart();
  });
  // TTLs tick between refreshes.
  setInterval(() => document.querySelectorAll("td.ttl[data-deadline]").forEach(tickTTL), 250);
  const follower = window.fencegwFollowLocks(() => sessionStorage.getItem(TOKEN_KEY), (view) => {
    followed = view;
    scheduleLocks();
  });
  refresh();
})();

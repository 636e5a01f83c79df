// The Synodic dashboard's page: plain JavaScript, no library, everything
// from the node that serves it. Live figures come as server-sent events
// (/api/events, once a second while the page is open); the view shown
// is fetched every two seconds while it is shown. Actions need a session:
// the cookie typed here never leaves the page, only an HMAC of a nonce.
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") e.onclick = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c));
  return e;
};

let view = "nodes";
let previous = null; // the last sample of /api/events, for rates

function showError(text) { $("#error").textContent = text || ""; }

async function getJSON(path) {
  const r = await fetch(path, { cache: "no-store" });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

async function act(path, fields = {}) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
  const body = await r.json();
  if (!r.ok) { showError(body.error || r.statusText); throw new Error(body.error); }
  showError("");
  return body;
}

// -- the session --------------------------------------------------------------

const enc = new TextEncoder();
const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");

async function hmac(keyBytes, message) {
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return crypto.subtle.sign("HMAC", key, enc.encode(message));
}

async function login(cookie) {
  const { nonce } = await getJSON("/api/challenge");
  const key = await hmac(enc.encode(cookie.trim()), "synodic dashboard");
  const proof = hex(await hmac(key, nonce));
  await act("/api/login", { nonce, proof });
  await checkSession();
}

async function checkSession() {
  const s = await getJSON("/api/session");
  $("#session").hidden = !s.authenticated;
  $("#login").hidden = s.authenticated || !s.actions;
}

$("#login").onsubmit = (ev) => {
  ev.preventDefault();
  const input = $("#cookie-input");
  login(input.value).catch((e) => showError("login: " + e.message)).finally(() => { input.value = ""; });
};

// -- live figures ---------------------------------------------------------------

function renderNodes(sample) {
  const tbody = $("#nodes tbody");
  tbody.replaceChildren();
  const before = new Map((previous ? previous.nodes : []).map((n) => [n.node, n]));
  for (const n of sample.nodes) {
    const p = before.get(n.node);
    const dt = p ? sample.time - previous.time : 0;
    const rate = (a, b) => (p && dt > 0 ? ((a - b) / dt) : 0);
    const links = (n.links || []).map((l) => {
      const pl = p && (p.links || []).find((x) => x.node === l.node);
      const out = pl ? rate(l.sent, pl.sent) / 1000 : 0, inn = pl ? rate(l.received, pl.received) / 1000 : 0;
      return `${l.node}: ${out.toFixed(1)} / ${inn.toFixed(1)}`;
    }).join("; ");
    tbody.append(el("tr", { "data-node": n.node },
      el("td", {}, n.node), el("td", { class: "state" }, n.state || (n.up ? "up" : (n.error || "down"))),
      el("td", {}, n.processes ?? ""), el("td", {}, n.up ? (n.load / 1000).toFixed(2) : ""),
      el("td", {}, n.up ? (n.rss / 1048576).toFixed(1) : ""),
      el("td", {}, p ? (100 * rate(n.cpu, p.cpu)).toFixed(0) : ""),
      el("td", {}, p ? rate(n.messages, p.messages).toFixed(0) : ""),
      el("td", {}, links)));
  }
  const pools = $("#pools tbody");
  pools.replaceChildren(...sample.nodes.filter((n) => n.up).map((n) =>
    el("tr", {}, el("td", {}, n.node), el("td", {}, n.workers), el("td", {}, n.pool_queued), el("td", {}, n.pool_idle))));
  const up = sample.nodes.filter((n) => n.up).length;
  $("#summary").textContent = `${up} node${up === 1 ? "" : "s"}`;
}

function renderScopeState(scope) {
  const badge = $("#scope-state");
  badge.textContent = scope.stopped ? "stopped" : "running";
  badge.classList.toggle("stopped", scope.stopped);
  $("#steps").textContent = `${scope.steps} stepped` + (scope.condition ? ` · break when ${scope.condition}` : "");
  const held = $("#held");
  held.replaceChildren(...scope.held.map((h) =>
    el("li", { "data-pid": h.pid }, `${h.pid} on ${h.node}: ${h.op} ${h.args} on ${h.space} `,
      el("button", { onclick: () => act("/api/scope/step", { pid: h.pid, node: h.node }).then(refresh) }, "step this"))));
  const hit = $("#hit");
  hit.hidden = !scope.hit;
  if (scope.hit) hit.textContent = `break: ${scope.hit.pid} on ${scope.hit.node} did ${scope.hit.op} ${scope.hit.args} on ${scope.hit.space}`;
}

function listen() {
  const events = new EventSource("/api/events");
  events.onmessage = (ev) => {
    const sample = JSON.parse(ev.data);
    renderNodes(sample);
    renderScopeState(sample.scope);
    previous = sample;
  };
  events.onerror = () => { $("#summary").textContent = "reconnecting…"; };
}

// -- views ----------------------------------------------------------------------

async function loadProcesses() {
  const by = $("#sort").value;
  const page = await getJSON(`/api/processes?by=${by}&limit=50`);
  $("#process-count").textContent = `${page.processes.length} of ${page.total} processes`;
  $("#processes tbody").replaceChildren(...page.processes.map((p) =>
    el("tr", { "data-pid": p.pid },
      el("td", {}, p.pid), el("td", {}, p.node), el("td", { class: "names" }, p.names.join(" ")),
      el("td", {}, p.state + (p.on ? ` (${p.on})` : "")), el("td", { class: "fn" }, p.fn || ""), el("td", {}, Math.round(p.cpu * 1000)),
      el("td", {}, Math.round(p.memory / 1024)), el("td", {}, p.mailbox),
      el("td", {},
        el("button", { class: "inspect", onclick: () => inspect(p.node, p.pid) }, "inspect"), " ",
        el("button", { class: "kill", onclick: () => act("/api/kill", { pid: p.pid }).then(refresh) }, "kill")))));
}

async function inspect(node, pid) {
  const pre = $("#stack");
  pre.hidden = false;
  try {
    const r = await getJSON(`/api/process?node=${encodeURIComponent(node)}&pid=${encodeURIComponent(pid)}`);
    pre.textContent = `${pid} on ${node}\n${r.stack}`;
  } catch (e) { pre.textContent = e.message; }
}

async function loadSpaces() {
  const spaces = await getJSON("/api/spaces");
  const box = $("#spaces");
  box.replaceChildren(...spaces.map((sp) => {
    const key = `${sp.node}/${sp.id}`;
    const before = (window.lastOps || {})[key];
    const ops = sp.outs + sp.takes + sp.reads;
    const rate = before ? ((ops - before.ops) / ((Date.now() - before.at) / 1000)).toFixed(1) : "…";
    (window.lastOps = window.lastOps || {})[key] = { ops, at: Date.now() };
    return el("div", { class: "space", "data-space": sp.name },
      el("h4", {}, `${sp.name} on ${sp.node}: ${sp.tuples} tuples, ${sp.waiting} waiting, ${rate} operations/s (out ${sp.outs}, take ${sp.takes}, rd ${sp.reads})`),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "class"), el("th", {}, "tuples"), el("th", {}))),
        el("tbody", {}, ...sp.classes.map((c) => el("tr", { class: "class" },
          el("td", {}, `(${c.first}, …) arity ${c.arity}`), el("td", {}, c.count),
          el("td", {}, el("button", { onclick: () => dump(sp, c) }, "dump")))))),
      ...sp.waiters.map((w) => el("div", { class: "waiter" }, `${w.pid} waits (${w.mode}) for ${w.template}`)));
  }));
}

async function dump(sp, c) {
  const q = new URLSearchParams({ node: sp.node, id: sp.id, arity: c.arity, first: c.first, max: 100 });
  const tuples = await getJSON(`/api/tuples?${q}`);
  $("#dump").textContent = `${sp.name}, class (${c.first}, …) arity ${c.arity}:\n` + tuples.join("\n");
}

let lastFrames = new Map(); // entity pid -> [frames, time]

async function loadRuns() {
  const runs = await getJSON("/api/runs");
  $("#skeletons tbody").replaceChildren(...runs.skeletons.map((r) =>
    el("tr", { "data-pid": r.pid }, el("td", {}, r.pid), el("td", {}, r.node), el("td", { class: "stats" }, el("pre", {}, r.stats)))));
  const now = Date.now() / 1000;
  const frames = new Map();
  $("#entities tbody").replaceChildren(...runs.entities.map((r) => {
    const m = r.stats.match(/^entity (\S+): (\d+) frames, ([\d.]+) frames\/s(.*)$/) || [];
    const count = Number(m[2] || 0);
    frames.set(r.pid, [count, now]);
    const before = lastFrames.get(r.pid);
    const rate = before && now > before[1] ? ((count - before[0]) / (now - before[1])).toFixed(1) : "…";
    return el("tr", { "data-pid": r.pid }, el("td", {}, m[1] || r.pid), el("td", {}, r.node), el("td", {}, count), el("td", { class: "rate" }, rate),
      el("td", {}, (m[3] || "") + " frames/s" + (m[4] || "")));
  }));
  lastFrames = frames;
}

function refresh() {
  const load = view === "processes" ? loadProcesses() : view === "scope" ? loadSpaces() : view === "pools" || view === "entities" ? loadRuns() : Promise.resolve();
  return load.then(() => showError("")).catch((e) => showError(e.message));
}

for (const tab of document.querySelectorAll(".tab")) {
  tab.onclick = () => {
    view = tab.dataset.view;
    for (const t of document.querySelectorAll(".tab")) t.classList.toggle("active", t === tab);
    for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== `view-${view}`;
    refresh();
  };
}
$("#sort").onchange = refresh;
$("#btn-stop").onclick = () => act("/api/scope/stop").then(refresh);
$("#btn-step").onclick = () => act("/api/scope/step").then(refresh);
$("#btn-continue").onclick = () => act("/api/scope/continue").then(refresh);
$("#btn-break").onclick = () => act("/api/scope/break", { condition: $("#break-input").value }).then(refresh);

checkSession().catch((e) => showError(e.message));
listen();
setInterval(refresh, 2000);

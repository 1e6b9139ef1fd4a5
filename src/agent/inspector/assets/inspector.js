// The Tollgate inspector page: the live list of captured requests (server-sent events from
// /api/requests/http/events), filters, the detail of one request, replay (as is or modified), and the
// tunnels' status. Captured data is shown with textContent only: it comes from the public internet.

import {
  apiErrorMessage,
  base64Bytes,
  clockTime,
  failureText,
  formatBytes,
  formatDuration,
  headerLines,
  headerValue,
  hexDump,
  jsonTokens,
  looksLikeText,
  matchesFilter,
  parseHeaderLines,
  prettyJson,
  rawText,
  replayField,
  splitMessage,
  statusClass,
  statusLabel,
  utf8,
} from "./format.js";
import { mountSimulation } from "./simulate.js";

const API = "/api/requests/http";
const MAX_ROWS = 500;
const $ = (id) => document.getElementById(id);

const state = {
  requests: new Map(), // id → summary
  selected: null,
  detail: null,
  part: "request",
  mode: "pretty",
  filter: { path: "", method: "", status: "", tunnel: "" },
  tunnels: [], // from /api/tunnels: {name, public_url, config: {addr}}
  picked: new Set(), // ids ticked in the list, for the simulation view
};

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-") || key.startsWith("aria-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

async function api(path, init = {}) {
  const response = await fetch(path, { ...init, headers: { "content-type": "application/json", ...(init.headers || {}) } });
  if (!response.ok) {
    const fallback = `${response.status} ${response.statusText}`;
    let message = fallback;
    try {
      message = apiErrorMessage(await response.json(), fallback);
    } catch {}
    throw new Error(message);
  }
  return response.status === 204 ? null : response.json();
}

// ---- views -------------------------------------------------------------------------------------------

const VIEWS = { "/status": "status", "/inspect/simulate": "simulate" };

function showView() {
  const view = VIEWS[location.pathname] ?? "requests";
  for (const name of ["requests", "simulate", "status"]) {
    $(`${name}-view`).hidden = name !== view;
    if (name === view) $(`nav-${name}`).setAttribute("aria-current", "page");
    else $(`nav-${name}`).removeAttribute("aria-current");
  }
  if (view === "status") refreshStatus();
  if (view === "simulate") simulation.updateScope();
}

/** The requests the simulation view may run: those picked, and those in the current filter, newest first. */
function chosenRequests() {
  const all = [...state.requests.values()].sort((a, b) => (a.id < b.id ? 1 : -1));
  return {
    picked: all.filter((summary) => state.picked.has(summary.id)).map((s) => s.id),
    filtered: all.filter((s) => matchesFilter(s, state.filter)).map((s) => s.id),
  };
}
const simulation = mountSimulation({ chosen: chosenRequests, summaries: () => state.requests });

for (const link of document.querySelectorAll("nav a")) {
  link.addEventListener("click", (event) => {
    event.preventDefault();
    history.pushState(null, "", link.getAttribute("href"));
    showView();
  });
}
addEventListener("popstate", showView);

// ---- live list ---------------------------------------------------------------------------------------

let renderQueued = false;
function queueRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderList();
  });
}

function renderList() {
  const all = [...state.requests.values()].sort((a, b) => (a.id < b.id ? 1 : -1));
  const shown = all.filter((summary) => matchesFilter(summary, state.filter));
  const rows = shown.slice(0, MAX_ROWS).map((summary) => {
    const meta = [
      el("time", { class: "time", text: clockTime(summary.start), dateTime: summary.start, title: summary.start }),
      el("span", { class: "tunnel", text: summary.tunnel_name, title: `tunnel ${summary.tunnel_name}` }),
    ];
    if (summary.state !== "pending" && !summary.edge_decision)
      meta.push(el("span", { class: "sep" }), el("span", { class: "duration", text: formatDuration(summary.duration) }));
    if (summary.replay_of) meta.push(el("span", { class: "sep" }), el("span", { class: "replay", text: "↻ replay" }));
    if (summary.edge_decision) {
      const more = summary.edge_decision.more_like_it;
      const title = `answered at the edge by ${summary.edge_decision.action_type}; never reached the local service`;
      meta.push(el("span", { class: "sep" }), el("span", { class: "at-edge", text: `at edge · ${summary.edge_decision.action_type}`, title }));
      if (more > 0) meta.push(el("span", { class: "sep" }), el("span", { class: "more-like-it", text: `+${more.toLocaleString("en-US")} more like it` }));
    } else if (summary.rate_limits?.some((each) => each.limited))
      meta.push(el("span", { class: "sep" }), el("span", { class: "at-edge", text: "over a limit" }));
    return el(
      "li",
      { class: "request-row", "data-id": summary.id, "aria-selected": String(summary.id === state.selected), tabIndex: 0 },
      el("input", {
        type: "checkbox",
        class: "pick",
        checked: state.picked.has(summary.id),
        title: "pick for a simulation",
        "aria-label": `pick ${summary.method} ${summary.uri}`,
      }),
      el("span", { class: "method", text: summary.method }),
      el("span", { class: "path", text: summary.uri, title: summary.uri }),
      el("span", { class: `status-badge ${statusClass(summary)}`, text: statusLabel(summary), title: summary.error || summary.status || "" }),
      el("span", { class: "meta" }, ...meta),
    );
  });
  $("request-list").replaceChildren(...rows);
  $("request-list").hidden = shown.length === 0;
  $("empty").hidden = all.length > 0;
  $("no-match").hidden = all.length === 0 || shown.length > 0;
  $("count").textContent = all.length === 0 ? "" : shown.length === all.length ? `${all.length} requests` : `${shown.length} of ${all.length} requests`;
  renderTunnelFilter(all);
  renderPlaceholder(all.length);
}

/** The tunnel filter offers every tunnel running and every tunnel a captured request came through. */
function renderTunnelFilter(all) {
  const names = new Set(state.tunnels.map((tunnel) => tunnel.name));
  for (const summary of all) names.add(summary.tunnel_name);
  if (state.filter.tunnel) names.add(state.filter.tunnel);
  const sorted = [...names].sort();
  const select = $("filter-tunnel");
  const current = [...select.options].slice(1).map((option) => option.value);
  if (current.join("\n") === sorted.join("\n")) return;
  select.replaceChildren(el("option", { value: "", text: "any tunnel" }), ...sorted.map((name) => el("option", { value: name, text: name })));
  select.value = state.filter.tunnel;
}

/** The right pane with nothing selected: what to do next, and where to send a first request. */
function renderPlaceholder(count) {
  $("placeholder").hidden = !$("detail").hidden;
  $("placeholder-title").textContent = count === 0 ? "Waiting for the first request" : "Select a request to see it here";
  $("placeholder-text").hidden = count === 0;
  const online = count === 0 ? state.tunnels.filter((tunnel) => tunnel.public_url && tunnel.config?.inspect !== false) : [];
  $("placeholder-send").hidden = online.length === 0;
  $("placeholder-urls").replaceChildren(
    ...online.flatMap((tunnel) => [
      el("span", { class: "tunnel", text: tunnel.name }),
      el("a", { href: tunnel.public_url, text: tunnel.public_url, target: "_blank", rel: "noopener noreferrer" }),
      el("span", { class: "tunnel", text: `→ ${tunnel.config.addr}` }),
    ]),
  );
}

async function refreshTunnels() {
  try {
    const { tunnels } = await api("/api/tunnels");
    state.tunnels = tunnels;
    queueRender();
  } catch {}
}

$("request-list").addEventListener("click", (event) => {
  const row = event.target.closest(".request-row");
  if (!row) return;
  if (event.target.classList.contains("pick")) {
    if (event.target.checked) state.picked.add(row.dataset.id);
    else state.picked.delete(row.dataset.id);
    return;
  }
  select(row.dataset.id);
});
$("request-list").addEventListener("keydown", (event) => {
  const row = event.target.closest(".request-row");
  if (!row) return;
  if (event.key === "Enter") select(row.dataset.id);
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    const next = event.key === "ArrowDown" ? row.nextElementSibling : row.previousElementSibling;
    if (next) {
      next.focus();
      select(next.dataset.id);
    }
  }
});

const FILTERS = [
  ["filter-path", "path"],
  ["filter-method", "method"],
  ["filter-tunnel", "tunnel"],
  ["filter-status", "status"],
];
for (const [id, key] of FILTERS) {
  $(id).addEventListener("input", () => {
    state.filter[key] = $(id).value;
    queueRender();
  });
}
$("reset-filters").addEventListener("click", () => {
  for (const [id, key] of FILTERS) {
    $(id).value = "";
    state.filter[key] = "";
  }
  queueRender();
});
$("filters").addEventListener("submit", (event) => event.preventDefault());

$("clear").addEventListener("click", async () => {
  try {
    await api(API, { method: "DELETE" });
    state.requests.clear();
    state.picked.clear();
    deselect();
    queueRender();
  } catch (error) {
    alert(`Could not clear: ${error.message}`);
  }
});

function applyBatch(batch) {
  if (batch.clear) {
    state.requests.clear();
    state.picked.clear();
    deselect();
  }
  for (const id of batch.remove) {
    state.requests.delete(id);
    state.picked.delete(id);
    if (id === state.selected) {
      note("This request was evicted (the captured requests passed inspect_db_size).", true);
      state.selected = null;
    }
  }
  for (const summary of batch.upsert) {
    state.requests.set(summary.id, summary);
    if (summary.id === state.selected) loadDetail(summary.id);
  }
  queueRender();
}

function connect() {
  if (!("EventSource" in window)) return poll();
  const source = new EventSource(`${API}/events`);
  source.addEventListener("open", () => setLive(true));
  source.addEventListener("error", () => setLive(false));
  source.addEventListener("snapshot", (event) => {
    const { requests } = JSON.parse(event.data);
    state.requests = new Map(requests.map((summary) => [summary.id, summary]));
    if (state.selected && !state.requests.has(state.selected)) deselect();
    setLive(true);
    queueRender();
  });
  source.addEventListener("changes", (event) => applyBatch(JSON.parse(event.data)));
}

/** Without EventSource: the list endpoint every 2 s. */
async function poll() {
  try {
    const { requests } = await api(`${API}?limit=${MAX_ROWS}`);
    state.requests = new Map(requests.map((view) => [view.id, summaryOf(view)]));
    setLive(true);
    queueRender();
  } catch {
    setLive(false);
  }
  setTimeout(poll, 2000);
}

function summaryOf(view) {
  return {
    id: view.id,
    tunnel_name: view.tunnel_name,
    remote_addr: view.remote_addr,
    start: view.start,
    duration: view.duration,
    method: view.request.method,
    uri: view.request.uri,
    status_code: view.response?.status_code ?? null,
    status: view.response?.status ?? null,
    state: view.state,
    error: view.error?.message ?? null,
    replay_of: view.replay_of,
    rate_limits: view.rate_limits ?? [],
    edge_decision: view.edge_decision ?? null,
  };
}

function setLive(on) {
  $("live").textContent = on ? "live" : "reconnecting…";
  $("live").className = `live ${on ? "on" : "off"}`;
}

// ---- detail ------------------------------------------------------------------------------------------

function deselect() {
  state.selected = null;
  state.detail = null;
  $("detail").hidden = true;
  $("placeholder").hidden = false;
}

async function select(id) {
  if (state.selected !== id) {
    $("modify").hidden = true;
    note("");
  }
  state.selected = id;
  $("detail").hidden = false;
  $("placeholder").hidden = true;
  for (const row of document.querySelectorAll(".request-row")) row.setAttribute("aria-selected", String(row.dataset.id === id));
  await loadDetail(id);
}

let loading = null;
async function loadDetail(id) {
  const request = (loading = api(`${API}/${encodeURIComponent(id)}`));
  try {
    const detail = await request;
    if (request !== loading || state.selected !== id) return;
    state.detail = detail;
    renderDetail();
  } catch (error) {
    if (state.selected === id) note(`Could not load ${id}: ${error.message}`, true);
  }
}

function renderDetail() {
  const detail = state.detail;
  if (!detail) return;
  const status = detail.response ? detail.response.status : detail.state === "failed" ? "failed" : "waiting for the response…";
  $("detail-title").textContent = `${detail.request.method} ${detail.request.uri} → ${status}`;
  const rows = [
    ["id", detail.id],
    ["tunnel", detail.tunnel_name],
    ["client", detail.remote_addr || "(the agent)"],
    ["start", `${new Date(detail.start).toLocaleString()}  (${detail.start})`],
    [
      "duration",
      detail.edge_decision
        ? "— (answered at the edge)"
        : detail.state === "pending"
          ? `${formatDuration(detail.duration)} so far`
          : formatDuration(detail.duration),
    ],
    ["state", detail.state],
  ];
  if (detail.error) rows.push(["error", `${detail.error.code}: ${detail.error.message}`]);
  if (detail.replay_of) rows.push(["replay of", detail.replay_of]);
  const edge = detail.edge_decision;
  if (edge) {
    const entry = `${edge.phase}[${edge.entry}]${edge.entry_name ? ` "${edge.entry_name}"` : ""}`;
    rows.push(["answered", `at the edge by ${entry}, action ${edge.action} (${edge.action_type}); it never reached the local service`]);
    if (edge.more_like_it > 0)
      rows.push([
        "more like it",
        `${edge.more_like_it.toLocaleString("en-US")} more requests answered at the edge were counted, not sent (the edge tells at a bounded rate)`,
      ]);
  }
  $("detail-summary").replaceChildren(...rows.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", { text: value })]));
  renderDecisions(detail);
  renderPart();
}

/** The rate-limit decisions that applied to the request, so "why was this limited?" is answered by looking. */
function renderDecisions(detail) {
  let panel = $("decisions");
  if (!panel) {
    panel = el("section", { id: "decisions", class: "decisions", "aria-label": "rate-limit decisions" });
    $("detail-summary").after(panel);
  }
  const limits = detail.rate_limits ?? [];
  panel.hidden = limits.length === 0 && !detail.edge_decision;
  if (panel.hidden) return panel.replaceChildren();
  const heading = el("h3", { text: limits.length ? "Rate-limit decisions" : "Rate-limit decisions: none counted this request" });
  const rows = limits.map((each) =>
    el(
      "tr",
      { class: each.limited ? "limited" : "" },
      el("td", { class: "mono", text: each.name }),
      el("td", { text: each.outcome + (each.error_code ? ` (${each.error_code})` : "") }),
      el("td", { class: "mono", text: each.bucket_key || "(empty)" }),
      el("td", { text: String(each.limited) }),
      el("td", { text: each.limited ? `${each.retry_after} s` : "—" }),
      el("td", { text: `${each.remaining} of ${each.capacity} per ${each.window_s} s` }),
      el("td", {
        class: "mono",
        text: `RateLimit-Policy: "${each.name}";q=${each.capacity};w=${each.window_s}\nRateLimit: "${each.name}";r=${each.remaining};t=${each.retry_after}`,
      }),
    ),
  );
  const head = el(
    "tr",
    {},
    ...["action", "outcome", "bucket_key", "limited", "retry-after", "remaining", "RateLimit fields"].map((name) => el("th", { text: name })),
  );
  const table = el("table", { class: "decision-table" }, el("thead", {}, head), el("tbody", {}, ...rows));
  panel.replaceChildren(heading, ...(limits.length ? [table] : []));
}

function renderPart() {
  const detail = state.detail;
  for (const tab of document.querySelectorAll(".tabs button")) tab.setAttribute("aria-selected", String(tab.dataset.part === state.part));
  for (const button of document.querySelectorAll(".mode")) button.setAttribute("aria-pressed", String(button.dataset.mode === state.mode));
  const part = state.part === "request" ? detail.request : detail.response;
  // No response to show: say why instead of empty headings and buttons with nothing behind them.
  $("modes").hidden = !part;
  $("part-missing").hidden = Boolean(part);
  if (!part) {
    const failed = detail.state === "failed";
    const why = failed
      ? failureText(detail.error)
      : { title: "Waiting for the response…", detail: "", text: "The local service has not answered yet; this updates when it does." };
    $("part-line").textContent = failed ? "no response" : "";
    $("part-missing").className = `missing${failed ? "" : " waiting"}`;
    $("missing-title").textContent = why.title;
    $("missing-detail").textContent = why.detail;
    $("missing-detail").hidden = !why.detail;
    $("missing-text").textContent = why.text;
    $("part-pretty").hidden = true;
    $("part-raw").hidden = true;
    return;
  }
  const bytes = base64Bytes(part.raw);
  const { head, body } = splitMessage(bytes);
  $("part-line").textContent = head.split("\r\n")[0];
  const lengthNote = part.truncated ? `${formatBytes(body.length)} of ${formatBytes(part.body_length)} kept (truncated)` : formatBytes(part.body_length);
  $("body-info").textContent = `${headerValue(part.headers, "content-type") || "no content type"} · ${lengthNote}`;

  $("headers").tBodies[0].replaceChildren(
    ...Object.entries(part.headers).flatMap(([name, values]) => values.map((value) => el("tr", {}, el("td", { text: name }), el("td", { text: value })))),
  );
  if (body.length === 0) $("body").replaceChildren(el("span", { class: "ctl", text: "(empty)" }));
  else if (!looksLikeText(body)) $("body").replaceChildren(el("span", { class: "ctl", text: `binary, ${formatBytes(body.length)}:\n` }), hexDump(body, 4096));
  else {
    const text = utf8(body);
    const pretty = prettyJson(text, headerValue(part.headers, "content-type"));
    if (pretty) $("body").replaceChildren(...jsonTokens(pretty).map(([piece, cls]) => (cls ? el("span", { class: cls, text: piece }) : piece)));
    else $("body").replaceChildren(text);
  }
  $("part-pretty").hidden = state.mode !== "pretty";
  $("part-raw").hidden = state.mode === "pretty";
  if (state.mode === "raw") $("part-raw").textContent = rawText(bytes);
  if (state.mode === "hex") $("part-raw").textContent = hexDump(bytes);
}

for (const tab of document.querySelectorAll(".tabs button")) {
  tab.addEventListener("click", () => {
    state.part = tab.dataset.part;
    if (state.detail) renderPart();
  });
}
for (const button of document.querySelectorAll(".mode")) {
  button.addEventListener("click", () => {
    state.mode = button.dataset.mode;
    if (state.detail) renderPart();
  });
}

function note(text, isError = false) {
  $("replay-note").textContent = text;
  $("replay-note").className = `note${isError ? " error" : ""}`;
}

// ---- replay ------------------------------------------------------------------------------------------

async function replay(body, button) {
  button.disabled = true;
  note("Replaying…");
  try {
    await api(API, { method: "POST", body: JSON.stringify(body) });
    note("Replayed: the replay is the newest request in the list.");
    return true;
  } catch (error) {
    note(`Replay failed: ${error.message}`, true);
    return false;
  } finally {
    button.disabled = false;
  }
}

$("replay").addEventListener("click", () => state.detail && replay({ id: state.detail.id }, $("replay")));

const MODIFY_FIELDS = { method: "modify-method", uri: "modify-uri", headers: "modify-headers", body: "modify-body" };

/** The modify form's error, said once, under the form, with the field it names marked. */
function modifyError(message, field = replayField(message)) {
  for (const [name, id] of Object.entries(MODIFY_FIELDS)) {
    if (name === field) $(id).setAttribute("aria-invalid", "true");
    else $(id).removeAttribute("aria-invalid");
  }
  $("modify-error").textContent = message;
  $("modify-error").hidden = !message;
}

$("replay-modify").addEventListener("click", async () => {
  const detail = state.detail;
  if (!detail) return;
  const { body } = splitMessage(base64Bytes(detail.request.raw));
  $("modify-method").value = detail.request.method;
  $("modify-uri").value = detail.request.uri;
  $("modify-headers").value = headerLines(detail.request.headers);
  $("modify-body").value = utf8(body);
  const names = await api("/api/tunnels").then(
    ({ tunnels }) => tunnels.map((tunnel) => tunnel.name),
    () => [detail.tunnel_name],
  );
  if (!names.includes(detail.tunnel_name)) names.unshift(detail.tunnel_name);
  $("modify-tunnel").replaceChildren(...names.map((name) => el("option", { value: name, text: name, selected: name === detail.tunnel_name })));
  modifyError("");
  $("modify").hidden = false;
  $("modify-method").focus();
});

$("modify-cancel").addEventListener("click", () => ($("modify").hidden = true));

$("modify").addEventListener("submit", async (event) => {
  event.preventDefault();
  const detail = state.detail;
  if (!detail) return;
  const parsed = parseHeaderLines($("modify-headers").value);
  if (parsed.error) return modifyError(`Headers, ${parsed.error}`, "headers");
  modifyError("");
  const button = $("modify-send");
  button.disabled = true;
  try {
    await api(API, {
      method: "POST",
      body: JSON.stringify({
        id: detail.id,
        tunnel_name: $("modify-tunnel").value || detail.tunnel_name,
        request: { method: $("modify-method").value.trim(), uri: $("modify-uri").value.trim(), headers: parsed.headers, body: $("modify-body").value },
      }),
    });
    $("modify").hidden = true;
    note("Replayed with modifications: the replay is the newest request in the list.");
  } catch (error) {
    modifyError(`Not sent: ${error.message}`);
  } finally {
    button.disabled = false;
  }
});

// ---- status ------------------------------------------------------------------------------------------

const ms = (ns) => (ns ? formatDuration(ns) : "–");
const rate = (value) => (value ? value.toFixed(3) : "0");

async function refreshStatus() {
  if ($("status-view").hidden) return;
  try {
    const [status, { tunnels }] = await Promise.all([api("/api/status"), api("/api/tunnels")]);
    const session = status.session || {};
    $("agent-status").replaceChildren(
      ...[
        ["session", `${status.status}${session.id ? ` (${session.id})` : ""}`],
        ["agent version", status.agent_version],
        ["edge", session.server_addr],
        ["region", session.region ?? "–"],
        ["latency", session.latency_ms != null ? `${session.latency_ms} ms` : "–"],
        ["reconnects", String(session.reconnects ?? 0)],
        ...(session.last_error ? [["last error", session.last_error]] : []),
      ].flatMap(([name, value]) => [el("dt", { text: name }), el("dd", { text: value ?? "" })]),
    );
    $("tunnels").tBodies[0].replaceChildren(
      ...tunnels.map((tunnel) => {
        const { conns, http } = tunnel.metrics;
        const url = tunnel.public_url ? el("a", { href: tunnel.public_url, text: tunnel.public_url, target: "_blank", rel: "noopener noreferrer" }) : "–";
        const cells = [tunnel.name, url, tunnel.config.addr, tunnel.state ?? "", tunnel.config.inspect ? "yes" : "no"];
        const numbers = [conns.count, conns.gauge, http.count, rate(http.rate1), rate(http.rate5), ms(http.p50), ms(http.p90), ms(http.p99)];
        return el(
          "tr",
          { "data-tunnel": tunnel.name },
          ...cells.map((content) => el("td", {}, content)),
          ...numbers.map((text) => el("td", { class: "num", text: String(text) })),
        );
      }),
    );
    state.tunnels = tunnels;
    if (tunnels.length === 0) $("tunnels").tBodies[0].replaceChildren(el("tr", {}, el("td", { colSpan: 13, text: "No tunnels." })));
  } catch (error) {
    $("agent-status").replaceChildren(el("dt", { text: "error" }), el("dd", { text: error.message }));
  }
}
setInterval(refreshStatus, 2000);
setInterval(refreshTunnels, 5000);

showView();
connect();
refreshTunnels();

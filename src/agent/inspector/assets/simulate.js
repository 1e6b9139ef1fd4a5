// The inspector's simulation view: a candidate traffic policy (pasted or loaded from a file) run by the agent
// (POST /api/simulate) over the requests picked in the list, or all in the current filter, and, next to each,
// what the candidate would have done and what changed compared with what really happened. Text only (textContent).

import { apiErrorMessage, clockTime } from "./format.js";

const $ = (id) => document.getElementById(id);
/** The agent refuses more (MAX_SIMULATED_REQUESTS); the page says so before asking. */
const MAX_REQUESTS = 1000;
/** Characters of a policy file the page reads (MAX_SIMULATED_POLICY_CHARS). */
const MAX_POLICY_CHARS = 256 * 1024;

const CHANGES = {
  same: "same",
  newly_limited: "newly limited",
  newly_denied: "newly denied",
  newly_allowed: "newly allowed",
  changed: "changed",
  not_run: "not run",
};

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

const statusClassOf = (code) => (code ? `s${String(code)[0]}` : "sfail");

/** One action's outcome in a few words: `rate-limit per-key: limited, retry after 58 s`. */
export function actionText(action) {
  const name = action.rate_limit ? ` ${action.rate_limit.name}` : "";
  let text = `${action.type}${name}: ${action.outcome.replace("_", " ")}`;
  if (action.rate_limit) {
    const { remaining, retry_after, capacity, window_s } = action.rate_limit;
    text +=
      action.outcome === "limited" || action.outcome === "shadow_limited"
        ? `, retry after ${retry_after} s`
        : `, ${remaining} of ${capacity} left in ${window_s} s`;
  } else if (action.status) text += ` ${action.status}`;
  if (action.error) text += ` (${action.error.code}: ${action.error.message})`;
  if (action.note) text += ` — ${action.note}`;
  return text;
}

/** What the candidate did to one request, as lines: entries matched, actions, expression errors. */
function whyLines(simulated) {
  if (!simulated) return ["not run: the simulation stopped before it"];
  const lines = [];
  if (simulated.matched.length === 0) lines.push("no entry matched");
  for (const action of simulated.actions) lines.push(`${action.phase}[${action.entry}] ${actionText(action)}`);
  for (const error of simulated.expression_errors) lines.push(`${error.phase}[${error.entry}] expression failed: ${error.message}`);
  return lines;
}

/**
 * Mounts the view. `chosen()` → {picked: ids, filtered: ids}: the requests picked in the list and those in the
 * current filter, newest first; `summaries` → the list's summaries by id (for times).
 */
export function mountSimulation({ chosen, summaries }) {
  const updateScope = () => {
    const { picked, filtered } = chosen();
    $("sim-scope-picked-label").textContent = `the ${picked.length} picked in the list`;
    $("sim-scope-filter-label").textContent = `all ${filtered.length} in the current filter`;
    $("sim-scope-picked").disabled = picked.length === 0;
    if (picked.length === 0) $("sim-scope-filter").checked = true;
  };

  $("sim-file").addEventListener("change", async () => {
    const file = $("sim-file").files[0];
    if (!file) return;
    if (file.size > MAX_POLICY_CHARS * 4) return note(`${file.name} is larger than a policy may be (${MAX_POLICY_CHARS} characters).`, true);
    $("sim-policy").value = await file.text();
    note(`Loaded ${file.name}.`);
  });

  $("sim-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const { picked, filtered } = chosen();
    const ids = ($("sim-scope-picked").checked ? picked : filtered).slice(0, MAX_REQUESTS);
    if (ids.length === 0) return note("No captured requests to simulate: pick some in the list, or widen the filter.", true);
    if ($("sim-policy").value.trim() === "") return note("Paste or load a candidate policy first.", true);
    $("sim-run").disabled = true;
    note(`Simulating ${ids.length} requests…`);
    try {
      const response = await fetch("/api/simulate", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ policy: $("sim-policy").value, ids }),
      });
      const body = await response.json();
      if (!response.ok) throw new Error(apiErrorMessage(body, `${response.status}`));
      render(body, summaries());
    } catch (error) {
      note(`Not simulated: ${error.message}`, true);
      $("sim-results").hidden = true;
    } finally {
      $("sim-run").disabled = false;
    }
  });

  function render({ results, missing, stopped }, known) {
    const counts = {};
    for (const result of results) counts[result.change] = (counts[result.change] ?? 0) + 1;
    const parts = Object.entries(CHANGES).flatMap(([key, label]) => (counts[key] ? [`${counts[key]} ${label}`] : []));
    let text = `${results.length} requests, oldest first: ${parts.join(", ")}.`;
    if (missing.length) text += ` ${missing.length} evicted since listed.`;
    if (stopped) text += ` ${stopped.reason}.`;
    note(text);
    $("sim-results").tBodies[0].replaceChildren(
      ...results.map((result) => {
        const actual = result.actual.status_code;
        const candidate = result.simulated?.status ?? actual;
        // Passed on by the candidate: the local service's answer stands (or its failure).
        const passes = result.simulated?.answered_by === "upstream";
        const start = known.get(result.id)?.start;
        return el(
          "tr",
          { "data-id": result.id, "data-change": result.change },
          el("td", { class: "time", text: start ? clockTime(start) : "" }),
          el("td", { class: "method", text: result.method }),
          el("td", { class: "path", text: result.uri, title: result.uri }),
          el("td", { class: `status-badge ${statusClassOf(actual)}`, text: actual ? String(actual) : "error" }),
          el("td", { class: `status-badge ${statusClassOf(candidate)}`, text: passes ? `${candidate ?? "error"} (passes)` : String(candidate ?? "error") }),
          el("td", {}, el("span", { class: `change ${result.change}`, text: CHANGES[result.change] })),
          el("td", { class: "why" }, ...whyLines(result.simulated).map((line) => el("div", { text: line }))),
        );
      }),
    );
    $("sim-results").hidden = false;
  }

  return { updateScope };
}

function note(text, isError = false) {
  $("sim-note").textContent = text;
  $("sim-note").className = `note${isError ? " error" : ""}`;
}

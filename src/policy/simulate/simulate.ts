/**
 * Runs a candidate policy (text, not deployed) over a list of requests in order, through the engine the gateway
 * uses (compilePolicy, runPhase, the actions) against fresh buckets in memory, at a simulated clock, and says per
 * request which entries matched, what each action did, and the status the client would have got. Touches no real
 * bucket, network or upstream. What it does not simulate: docs/policies.md#simulating-a-candidate-policy.
 */

import { compilePolicy, type CompiledEntry } from "../compile.ts";
import { runPhase } from "../evaluate.ts";
import { EvaluationBudget } from "../evaluation-budget.ts";
import { initialVars } from "../actions/index.ts";
import type { ActionServices, Exchange, Phase } from "../exchange.ts";
import type { PolicyIssue } from "../issues.ts";
import { withRateLimitFields } from "../rate-limit-fields.ts";
import { readSource } from "../source.ts";
import { isJsonContentType, jsonBodyValue, MAX_SETTLE_BODY_BYTES } from "../variables/response-body.ts";
import { fromZodIssues } from "../zod-issues.ts";
import {
  MAX_SIMULATION_ACTIONS,
  MAX_SIMULATION_CEL_WORK,
  MAX_SIMULATION_EXPRESSIONS,
  MAX_SIMULATION_REGEX_WORK,
  MAX_SIMULATION_TRACE_RECORDS,
} from "./bounds.ts";
import { type SimulatedRequest, simulationInputSchema } from "./input.ts";
import { MemoryCounter } from "./memory-counter.ts";
import { type ActionTrace, type EntryMatch, type TraceSink, tracedPolicy } from "./traced-policy.ts";

/** The name the policy text goes by in located messages: `policy:7: inbound[0].actions[0].config.rate: …`. */
export const POLICY_FILE = "policy";

export interface SimulatedDecision {
  /** Position in the list asked. */
  index: number;
  matched: EntryMatch[];
  actions: ActionTrace[];
  /** Expressions that failed to evaluate (counted false, as live). */
  expression_errors: Array<{ phase: Phase; entry: number; expression: string; message: string }>;
  /** What the client would get: the policy's answer, the response given, or null (passed, no response given). */
  status: number | null;
  /** Who decided the status: the inbound phase, the upstream (the response given), or the outbound phase. */
  answered_by: "inbound" | "upstream" | "outbound";
  /** retry-after, ratelimit and ratelimit-policy of the answer, when it has them. */
  headers: Record<string, string>;
}

export type SimulationResult =
  | {
      ok: true;
      decisions: SimulatedDecision[];
      /** Requests not run because the simulation's work bounds were reached (bounds.ts), and which. */
      stopped?: { at: number; reason: string };
      buckets: number;
    }
  /** `source`: `input` for the request list and fields, `policy` for the policy text (file `policy`, with lines). */
  | { ok: false; source: "input" | "policy"; issues: PolicyIssue[] };

export interface SimulateOptions {
  /** The time of `at_ms` 0 when the input names no `start`. */
  readonly now?: () => number;
}

/** Budgets as live, with the work each request did counted, so the simulation's total can be bounded. */
class MeteredBudget extends EvaluationBudget {
  cel = 0;
  regex = 0;
  override chargeCel(units: number): void {
    this.cel += units;
    super.chargeCel(units);
  }
  override chargeRegex(units: number): void {
    super.chargeRegex(units);
    this.regex += units;
  }
}

const SHOWN_HEADERS = ["retry-after", "ratelimit", "ratelimit-policy"];

export async function simulatePolicy(value: unknown, options: SimulateOptions = {}): Promise<SimulationResult> {
  const parsed = simulationInputSchema.safeParse(value);
  if (!parsed.success) return { ok: false, source: "input", issues: fromZodIssues(parsed.error.issues, value, () => ({})) };
  const input = parsed.data;
  const source = readSource(input.policy, POLICY_FILE);
  if (!source.ok) return { ok: false, source: "policy", issues: source.issues };
  const compiled = compilePolicy(source.document.value, { file: POLICY_FILE, lineOf: source.document.lineOf, origin: input.origin });
  if (!compiled.ok) return { ok: false, source: "policy", issues: compiled.issues };

  const start = input.start !== undefined ? Date.parse(input.start) : (options.now ?? Date.now)();
  let at = start;
  const counter = new MemoryCounter(() => at);
  let current: TraceSink & { decision: SimulatedDecision };
  const policy = tracedPolicy(compiled.policy, source.document.value, () => current);
  const place = new Map<CompiledEntry, { phase: Phase; entry: number }>();
  for (const phase of ["inbound", "outbound"] as const) {
    for (const [index, entry] of policy[phase].entries()) place.set(entry, { phase, entry: index });
  }
  const services: ActionServices = {
    counter,
    now: () => at,
    decisions: { rateLimit: (event) => (current.lastRateLimit = event), log: () => {} },
    interpolationErrors: { interpolationError: () => {} },
  };
  const log = {
    expressionError(entry: object, expression: string, message: string) {
      const where = place.get(entry as CompiledEntry);
      if (where) current.decision.expression_errors.push({ ...where, expression, message });
    },
  };

  const decisions: SimulatedDecision[] = [];
  let cel = 0;
  let regex = 0;
  let records = 0;
  let actions = 0;
  let evaluations = 0;
  for (const [index, request] of input.requests.entries()) {
    const stop = stopReason(cel, regex, actions, evaluations, records);
    if (stop) return { ok: true, decisions, stopped: { at: index, reason: `not run from request ${index} on: ${stop}` }, buckets: counter.buckets };
    at = start + request.at_ms;
    const decision: SimulatedDecision = { index, matched: [], actions: [], expression_errors: [], status: null, answered_by: "upstream", headers: {} };
    current = {
      decision,
      lastRateLimit: undefined,
      evaluated: () => evaluations++,
      matched: (match) => decision.matched.push(match),
      action: (trace) => decision.actions.push(trace),
    };
    const budget = new MeteredBudget();
    await runOne(request, policy, services, log, budget, decision);
    cel += budget.cel;
    regex += budget.regex;
    actions += decision.actions.length;
    records += decision.matched.length + decision.actions.length + decision.expression_errors.length;
    decisions.push(decision);
  }
  return { ok: true, decisions, buckets: counter.buckets };
}

/** Why the next request is not run: the requests before it went past one of the simulation's work bounds. */
function stopReason(cel: number, regex: number, actions: number, evaluations: number, records: number): string | undefined {
  if (cel > MAX_SIMULATION_CEL_WORK) return `the requests before it used more than ${MAX_SIMULATION_CEL_WORK} units of CEL work together`;
  if (regex > MAX_SIMULATION_REGEX_WORK) return `the requests before it used more than ${MAX_SIMULATION_REGEX_WORK} units of regex work together`;
  if (actions > MAX_SIMULATION_ACTIONS) return `the requests before it ran more than ${MAX_SIMULATION_ACTIONS} actions together`;
  if (evaluations > MAX_SIMULATION_EXPRESSIONS) return `the requests before it evaluated more than ${MAX_SIMULATION_EXPRESSIONS} expressions together`;
  if (records > MAX_SIMULATION_TRACE_RECORDS) return `the decisions before it list more than ${MAX_SIMULATION_TRACE_RECORDS} entries and actions`;
  return undefined;
}

async function runOne(
  request: SimulatedRequest,
  policy: ReturnType<typeof tracedPolicy>,
  services: ActionServices,
  log: { expressionError(entry: object, expression: string, message: string): void },
  budget: EvaluationBudget,
  decision: SimulatedDecision,
): Promise<void> {
  const url = new URL(request.url);
  const exchange: Exchange = {
    scope: "simulation",
    clientIp: request.client_ip,
    request: { method: request.method.toUpperCase(), url, host: url.hostname, headers: new Headers(request.headers ?? []) },
    vars: initialVars(),
    budget,
  };
  const show = (response: Response) => {
    const answered = withRateLimitFields(response, exchange);
    decision.status = answered.status;
    for (const name of SHOWN_HEADERS) {
      const value = answered.headers.get(name);
      if (value !== null) decision.headers[name] = value;
    }
  };
  const rejected = await runPhase(policy.inbound, exchange, services, log);
  if (rejected) {
    decision.answered_by = "inbound";
    return show(rejected);
  }
  const given = request.response;
  if (!given) {
    // Passed on to the upstream, whose answer nobody gave: no response phase, no settle.
    if (exchange.rateLimitFields?.length) show(new Response(null, { status: 200 }));
    decision.status = null;
    return;
  }
  const headers = new Headers(given.headers ?? []);
  // Read once for every settle that reads it, as the gateway does (a body parsed per settle was work × settles).
  let body: { value: unknown } | undefined;
  for (const settle of exchange.settles ?? []) {
    if (settle.readsBody) body ??= { value: settleBody(given.body, headers) };
    await settle.settle({ status: given.status, headers }, settle.readsBody ? body?.value : undefined);
  }
  exchange.response = { status: given.status, headers: new Headers(headers) };
  const replaced = await runPhase(policy.outbound, exchange, services, log);
  decision.answered_by = replaced ? "outbound" : "upstream";
  show(replaced ?? new Response(null, { status: given.status, headers: exchange.response.headers }));
}

/** `res.body` as a live settle would read it: JSON within the bound, else absent. */
function settleBody(text: string | undefined, headers: Headers): unknown {
  if (text === undefined || !isJsonContentType(headers.get("content-type"))) return undefined;
  if (new TextEncoder().encode(text).byteLength > MAX_SETTLE_BODY_BYTES) return undefined;
  return jsonBodyValue(text);
}

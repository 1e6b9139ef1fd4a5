/**
 * CEL expressions of traffic policies: checked and planned once at load, evaluated per request
 * against the variables of the exchange (`req`, `conn`, `res`, `actions`) and the gateway's macros.
 */

import { celEnv, celError, celFunc, CelScalar, isCelError, listType, parse, plan, type CelResult } from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";
import ipaddr from "ipaddr.js";
import { type ActionRegistry, actionRegistry } from "./actions/index.ts";
import type { Exchange, Phase } from "./exchange.ts";
import { activation, type Bindings } from "./cel-activation.ts";
import { linearFunctions } from "./cel-linear.ts";
import { CALL_UNITS, meteredEnv, meterIterations } from "./cel-meter.ts";
import type { CompileExpressionResult, CompileValueExpressionResult, ExpressionCompiler } from "./compiled-expression.ts";
import { BudgetExceeded } from "./evaluation-budget.ts";
import { checkExpressionCost, checkExpressionText } from "./expression-cost.ts";
import type { CompiledPattern } from "./regex.ts";
import { checkTypes, type CheckContext } from "./cel-check.ts";
import { assignable, BOOL, display, type Type } from "./cel-types.ts";
import { VARIABLE_TYPES, VISIBLE_VARIABLES } from "./variables/catalog.ts";
import { RES_WITH_BODY, selectsResponseBody } from "./variables/response-body.ts";
import { rewriteHidden } from "./variables/rewrite.ts";

/**
 * The macros read the exchange being evaluated, and matches() the patterns its expression compiled at
 * load. CEL evaluation is synchronous, so both are held here for exactly the duration of one `evaluate` call.
 */
let current: { exchange: Exchange; patterns: ReadonlyMap<string, CompiledPattern> } | undefined;

/** matches() through the patterns compiled at load, metered per request (the check comes before the work). */
function meteredPattern(source: string) {
  const evaluation = current;
  const pattern = evaluation?.patterns.get(source);
  if (!evaluation || !pattern) throw new Error(`pattern ${JSON.stringify(source)} was not compiled when the policy loaded`);
  return {
    test(text: string): boolean {
      evaluation.exchange.budget.chargeRegex(text.length * pattern.instructions);
      return pattern.test(text);
    },
  };
}

function headerValues(headers: Headers | undefined, name: string): string[] {
  if (!headers) return [];
  const lower = name.toLowerCase();
  // Headers.get joins repeated fields with ", ", which is wrong for set-cookie (its values contain commas);
  // getSetCookie gives each on its own, and reads only those (iterating sorts every header, once per call).
  if (lower === "set-cookie") return (headers as Headers & { getSetCookie(): string[] }).getSetCookie();
  const value = headers.get(lower);
  return value === null ? [] : [value];
}

/**
 * Characters of the longest address the CIDR functions take: IPv6 with an embedded IPv4 (45) and a zone
 * naming an interface (`%` and at most 15, Linux's IFNAMSIZ), with room to spare. ipaddr.js itself takes any
 * number of leading zeros and any zone, and its parsers cost far more per character than a unit
 * (docs/security.md), so a longer text is answered false before any parsing.
 */
export const MAX_ADDRESS_CHARS = 64;
/** An address of MAX_ADDRESS_CHARS and a prefix length of up to three digits. */
const MAX_CIDR_CHARS = MAX_ADDRESS_CHARS + 4;

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** The address `ip` names, or undefined for anything unparsable or longer than MAX_ADDRESS_CHARS. */
function parseAddress(ip: string): Address | undefined {
  if (ip.length > MAX_ADDRESS_CHARS) return undefined;
  try {
    // Only IPv6 has colons. ipaddr.parse would try IPv6 first, and fail, for every IPv4 address.
    return ip.includes(":") ? ipaddr.IPv6.parse(ip) : ipaddr.IPv4.parse(ip);
  } catch {
    return undefined;
  }
}

/** True when `address` lies in `cidr`; false for a range unparsable or longer than MAX_CIDR_CHARS. */
function inRange(address: Address, cidr: string): boolean {
  if (cidr.length > MAX_CIDR_CHARS) return false;
  try {
    const [range, bits] = cidr.includes(":") ? ipaddr.IPv6.parseCIDR(cidr) : ipaddr.IPv4.parseCIDR(cidr);
    let candidate = address;
    if (candidate.kind() !== range.kind()) {
      if (candidate.kind() !== "ipv6" || !(candidate as ipaddr.IPv6).isIPv4MappedAddress()) return false;
      candidate = (candidate as ipaddr.IPv6).toIPv4Address();
    }
    return candidate.match(range, bits);
  } catch {
    return false;
  }
}

/** True when `ip` lies in `cidr`; false for anything unparsable, never an error. */
export function ipInCidr(ip: string, cidr: string): boolean {
  const address = parseAddress(ip);
  return address !== undefined && inRange(address, cidr);
}

/** True when `ip` lies in any of `cidrs`: the address is parsed once, each range once. */
function ipInAnyCidr(ip: string, cidrs: Iterable<unknown>): boolean {
  const address = parseAddress(ip);
  if (address === undefined) return false;
  for (const cidr of cidrs) if (typeof cidr === "string" && inRange(address, cidr)) return true;
  return false;
}

/**
 * The request's query parameters for getQueryParam/hasQueryParam, whose getAll and has scan every parameter:
 * one unit per character of the query is charged before each scan (the meter sees only the name taken).
 */
function searchParams(): URLSearchParams | undefined {
  const exchange = current?.exchange;
  if (!exchange) return undefined;
  exchange.budget.chargeCel(exchange.request.url.search.length);
  return exchange.request.url.searchParams;
}

const STRING_LIST = listType(CelScalar.STRING);

const macros = [
  celFunc("getReqHeader", [CelScalar.STRING], STRING_LIST, (name) => headerValues(current?.exchange.request.headers, name)),
  celFunc("hasReqHeader", [CelScalar.STRING], CelScalar.BOOL, (name) => headerValues(current?.exchange.request.headers, name).length > 0),
  celFunc("getResHeader", [CelScalar.STRING], STRING_LIST, (name) => headerValues(current?.exchange.response?.headers, name)),
  celFunc("hasResHeader", [CelScalar.STRING], CelScalar.BOOL, (name) => headerValues(current?.exchange.response?.headers, name).length > 0),
  celFunc("getQueryParam", [CelScalar.STRING], STRING_LIST, (name) => searchParams()?.getAll(name) ?? []),
  celFunc("hasQueryParam", [CelScalar.STRING], CelScalar.BOOL, (name) => searchParams()?.has(name) ?? false),
  // As ngrok's: a double in [0, 1), for splitting traffic at random (`rand.double() <= 0.2`).
  celFunc("rand.double", [], CelScalar.DOUBLE, () => Math.random()),
  celFunc("inCidrRange", [CelScalar.STRING, CelScalar.STRING], CelScalar.BOOL, (ip, cidr) => ipInCidr(ip, cidr)),
  celFunc("inCidrRanges", [CelScalar.STRING, STRING_LIST], CelScalar.BOOL, (ip, cidrs) => ipInAnyCidr(ip, cidrs)),
];

// The cost model admits only literal patterns, compiled at load: the regex engine only looks them up.
const env = celEnv({ funcs: [...strings, ...linearFunctions, ...macros], re2: { compile: meteredPattern } });
/** The same functions, each call charged to the budget of the request being evaluated. */
const metered = meteredEnv(env, () => current?.exchange.budget);

const RESPONSE_MACROS = new Set(["getResHeader", "hasResHeader"]);

/**
 * What expressions of `phase` may read: the catalog's variables, `actions` as `actions` (a registry) declares
 * it, and with `responseBody` (a rate-limit's settle_cost) `res.body`, the response's JSON body.
 */
function typeContext(phase: Phase, actions: ActionRegistry, responseBody = false): CheckContext {
  const types = VARIABLE_TYPES[phase];
  return {
    variable(name) {
      if (name === "actions") return actions.actionsType;
      if (responseBody && name === "res") return RES_WITH_BODY;
      return types.get(name);
    },
    visible: VISIBLE_VARIABLES[phase],
    funcs: env.funcs,
    otherPhase(name) {
      if (phase === "outbound") return undefined;
      if (name === "res") return "res is only available in outbound expressions";
      return RESPONSE_MACROS.has(name) ? `${name} is only available in outbound expressions` : undefined;
    },
  };
}

/** V8's Error, whose `stackTraceLimit` (how many frames a new Error captures) the Workers types leave out. */
const v8Error = Error as ErrorConstructor & { stackTraceLimit: number };

export type { CompiledExpression } from "./compiled-expression.ts";

/** What an expression is checked against besides its phase. */
export interface ExpressionOptions {
  /** An outbound expression that may also read `res.body` (a rate-limit's settle_cost), whose bindings then carry it. */
  readonly responseBody?: boolean;
  /** The actions whose result variables `actions.*` holds; default: the gateway's (actions/index.ts). */
  readonly actions?: ActionRegistry;
}

/**
 * Parses, checks and plans one expression of any result type, bounded, checked and metered as entry
 * expressions are. Never throws.
 */
export function compileValueExpression(
  source: string,
  phase: Phase,
  { responseBody = false, actions = actionRegistry }: ExpressionOptions = {},
): CompileValueExpressionResult {
  const prepared = prepare(source, typeContext(phase, actions, responseBody));
  if (!prepared.ok) return prepared;
  const { program, patterns, type } = prepared;
  return {
    ok: true,
    expression: {
      source,
      patterns: patterns.size,
      ...(responseBody ? { readsResponseBody: prepared.readsResponseBody } : {}),
      type,
      evaluate(exchange, bindings) {
        const result = run(program, patterns, exchange, bindings);
        if (isCelError(result)) return { error: evaluationMessage(result.message) };
        return result;
      },
    },
  };
}

/**
 * Parses, checks and plans one expression. Never throws: the text is bounded before parsing and the tree
 * before any recursive walk, so even a hostile expression comes back as a message.
 */
export function compileExpression(
  source: string,
  phase: Phase,
  { actions = actionRegistry }: Pick<ExpressionOptions, "actions"> = {},
): CompileExpressionResult {
  const prepared = prepare(source, typeContext(phase, actions));
  if (!prepared.ok) return prepared;
  const { program, patterns, type } = prepared;
  if (!assignable(BOOL, type)) return { ok: false, message: `invalid CEL: an entry expression must be a bool, and this one is ${display(type)}` };
  return {
    ok: true,
    expression: {
      source,
      patterns: patterns.size,
      evaluate(exchange, bindings) {
        const result = run(program, patterns, exchange, bindings);
        if (isCelError(result)) return { error: evaluationMessage(result.message) };
        if (typeof result !== "boolean") return { error: `expression did not evaluate to a bool` };
        return result;
      },
    },
  };
}

/**
 * The compiler a policy hands its actions (ActionContext.expressions): their own expressions are checked against
 * the same registry as the policy's entries, default the gateway's.
 */
export function expressionCompiler(actions: ActionRegistry = actionRegistry): ExpressionCompiler {
  return {
    condition: (source, phase) => compileExpression(source, phase, { actions }),
    value: (source, phase, { responseBody } = {}) => compileValueExpression(source, phase, { responseBody, actions }),
  };
}

type Program = ReturnType<typeof plan>;

type Prepared =
  | { ok: true; program: Program; patterns: ReadonlyMap<string, CompiledPattern>; type: Type; readsResponseBody: boolean }
  | { ok: false; message: string };

/** Bounds, parses, type-checks (against `context`) and plans one expression. */
function prepare(source: string, context: CheckContext): Prepared {
  const tooLarge = checkExpressionText(source);
  if (tooLarge) return { ok: false, message: tooLarge };
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (error) {
    return { ok: false, message: `invalid CEL: ${(error as Error).message.replace(/^<input>:/, "")}` };
  }
  const cost = checkExpressionCost(parsed.expr);
  if (!cost.ok) return { ok: false, message: cost.message };
  const expr = rewriteHidden(parsed.expr);
  const checked = checkTypes(expr, context);
  if (!checked.ok) return { ok: false, message: `invalid CEL: ${checked.message}` };
  const program = plan(metered, { ...parsed, expr: meterIterations(expr) });
  return { ok: true, program, patterns: cost.patterns, type: checked.type, readsResponseBody: selectsResponseBody(expr) };
}

/**
 * The library says `index 0 out of bounds [0, -1)` for any index past a list's end (it never names the length),
 * which reads as a bug; most often the list is empty because the request lacks the header or parameter read.
 */
const INDEX_PAST_END = /^index (-?\d+) out of bounds \[0, -1\)$/;

/** An evaluation error as the logs and the result variables say it. */
function evaluationMessage(message: string): string {
  const past = INDEX_PAST_END.exec(message);
  if (!past) return message;
  return `index ${past[1]} is past the end of the list (getReqHeader, getResHeader and getQueryParam give an empty one for a header or parameter the request does not carry)`;
}

/** One metered evaluation; a spent budget comes back as an Error value like any other failure. */
function run(program: Program, patterns: ReadonlyMap<string, CompiledPattern>, exchange: Exchange, bindings: Bindings | undefined): CelResult {
  current = { exchange, patterns };
  // An expression failing on absent data (a missing header indexed) comes back as an Error object, and
  // V8 spends most of such an evaluation capturing its stack, which nothing reads: only the message is
  // kept, and the planner turns any exception into such a value. Evaluation is synchronous, so the
  // limit is restored before anything else runs.
  const stackTraceLimit = v8Error.stackTraceLimit;
  v8Error.stackTraceLimit = 0;
  try {
    // Every evaluation costs something, so a request whose budget is spent stops evaluating at once.
    exchange.budget.chargeCel(CALL_UNITS);
    return program((bindings ?? activation(exchange)) as never);
  } catch (error) {
    if (!(error instanceof BudgetExceeded)) throw error;
    return celError(error.message);
  } finally {
    v8Error.stackTraceLimit = stackTraceLimit;
    current = undefined;
  }
}

/**
 * CEL expressions of traffic policies: checked and planned once at load, evaluated per request
 * against the variables of the exchange (`req`, `conn`, `res`, `actions`) and the gateway's macros.
 */

import { celEnv, celFunc, CelScalar, isCelError, listType, parse, plan, type CelValue } from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";
import ipaddr from "ipaddr.js";
import type { Exchange, Phase } from "./exchange.ts";

/**
 * The macros read the exchange being evaluated. CEL evaluation is synchronous, so the exchange
 * is held here for exactly the duration of one `evaluate` call.
 */
let current: Exchange | undefined;

function headerValues(headers: Headers | undefined, name: string): string[] {
  if (!headers) return [];
  const value = headers.get(name.toLowerCase());
  return value === null ? [] : [value];
}

/** True when `ip` lies in `cidr`; false for anything unparsable, never an error. */
export function ipInCidr(ip: string, cidr: string): boolean {
  try {
    let address = ipaddr.parse(ip);
    const [range, bits] = ipaddr.parseCIDR(cidr);
    if (address.kind() !== range.kind()) {
      if (address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
        address = (address as ipaddr.IPv6).toIPv4Address();
      } else return false;
    }
    return address.match(range, bits);
  } catch {
    return false;
  }
}

type Expr = ReturnType<typeof parse>["expr"];

const STRING_LIST = listType(CelScalar.STRING);

const macros = [
  celFunc("getReqHeader", [CelScalar.STRING], STRING_LIST, (name) => headerValues(current?.request.headers, name)),
  celFunc("hasReqHeader", [CelScalar.STRING], CelScalar.BOOL, (name) => headerValues(current?.request.headers, name).length > 0),
  celFunc("getResHeader", [CelScalar.STRING], STRING_LIST, (name) => headerValues(current?.response?.headers, name)),
  celFunc("hasResHeader", [CelScalar.STRING], CelScalar.BOOL, (name) => headerValues(current?.response?.headers, name).length > 0),
  celFunc("getQueryParam", [CelScalar.STRING], STRING_LIST, (name) => current?.request.url.searchParams.getAll(name) ?? []),
  celFunc("hasQueryParam", [CelScalar.STRING], CelScalar.BOOL, (name) => current?.request.url.searchParams.has(name) ?? false),
  celFunc("inCidrRange", [CelScalar.STRING, CelScalar.STRING], CelScalar.BOOL, (ip, cidr) => ipInCidr(ip, cidr)),
  celFunc("inCidrRanges", [CelScalar.STRING, STRING_LIST], CelScalar.BOOL, (ip, cidrs) => {
    for (const cidr of cidrs) if (typeof cidr === "string" && ipInCidr(ip, cidr)) return true;
    return false;
  }),
];

const env = celEnv({ funcs: [...strings, ...macros] });

/** Functions the planner implements itself rather than through the function registry. */
const PLANNER_BUILTINS = new Set(["_&&_", "_||_", "_?_:_", "_[_]", "_[?_]", "_?._", "@not_strictly_false"]);
const RESPONSE_MACROS = new Set(["getResHeader", "hasResHeader"]);

function variablesOf(phase: Phase): Set<string> {
  return new Set(phase === "outbound" ? ["req", "conn", "actions", "res"] : ["req", "conn", "actions"]);
}

/** Finds what the evaluator would only discover at request time: unknown variables and functions. */
function checkExpr(expr: Expr | undefined, phase: Phase, locals: ReadonlySet<string>): string | undefined {
  if (!expr) return undefined;
  const kind = expr.exprKind;
  switch (kind.case) {
    case "identExpr": {
      const name = kind.value.name;
      if (locals.has(name) || variablesOf(phase).has(name)) return undefined;
      if (name === "res") return "res is only available in outbound expressions";
      return `unknown variable '${name}' (expected req, conn, actions${phase === "outbound" ? ", res" : ""})`;
    }
    case "selectExpr":
      return checkExpr(kind.value.operand, phase, locals);
    case "callExpr": {
      const name = kind.value.function;
      if (!PLANNER_BUILTINS.has(name) && !env.funcs.find(name)) return `unknown function '${name}'`;
      if (phase === "inbound" && RESPONSE_MACROS.has(name)) return `${name} is only available in outbound expressions`;
      for (const child of [kind.value.target, ...kind.value.args]) {
        const problem = checkExpr(child, phase, locals);
        if (problem) return problem;
      }
      return undefined;
    }
    case "listExpr":
      for (const element of kind.value.elements) {
        const problem = checkExpr(element, phase, locals);
        if (problem) return problem;
      }
      return undefined;
    case "structExpr":
      for (const entry of kind.value.entries) {
        const key = entry.keyKind.case === "mapKey" ? checkExpr(entry.keyKind.value, phase, locals) : undefined;
        const problem = key ?? checkExpr(entry.value, phase, locals);
        if (problem) return problem;
      }
      return undefined;
    case "comprehensionExpr": {
      const c = kind.value;
      const problem = checkExpr(c.iterRange, phase, locals) ?? checkExpr(c.accuInit, phase, locals);
      if (problem) return problem;
      const inner = new Set([...locals, c.iterVar, c.iterVar2, c.accuVar].filter(Boolean));
      return checkExpr(c.loopCondition, phase, inner) ?? checkExpr(c.loopStep, phase, inner) ?? checkExpr(c.result, phase, inner);
    }
    default:
      return undefined;
  }
}

export interface CompiledExpression {
  readonly source: string;
  /** True/false; an evaluation error (a missing key, a type mismatch) is returned as a message. */
  evaluate(exchange: Exchange): boolean | { error: string };
}

export type CompileExpressionResult = { ok: true; expression: CompiledExpression } | { ok: false; message: string };

export function compileExpression(source: string, phase: Phase): CompileExpressionResult {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (error) {
    return { ok: false, message: `invalid CEL: ${(error as Error).message.replace(/^<input>:/, "")}` };
  }
  const problem = checkExpr(parsed.expr, phase, new Set());
  if (problem) return { ok: false, message: `invalid CEL: ${problem}` };
  const program = plan(env, parsed);
  return {
    ok: true,
    expression: {
      source,
      evaluate(exchange) {
        current = exchange;
        let result: CelValue | Error;
        try {
          result = program(activation(exchange));
        } finally {
          current = undefined;
        }
        if (isCelError(result)) return { error: result.message };
        if (typeof result !== "boolean") return { error: `expression did not evaluate to a bool` };
        return result;
      },
    },
  };
}

function headerMap(headers: Headers): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const [name, value] of headers) map.set(name, [value]);
  return map;
}

function activation(exchange: Exchange) {
  const { request, response, vars } = exchange;
  const rateLimit = vars.rate_limit;
  const bindings: Record<string, Map<string, unknown>> = {
    req: new Map<string, unknown>([
      ["method", request.method],
      ["host", request.host],
      ["url", new Map([["path", request.url.pathname], ["query", request.url.search.replace(/^\?/, "")], ["raw", request.url.pathname + request.url.search]])],
      ["headers", headerMap(request.headers)],
    ]),
    conn: new Map([["client_ip", exchange.clientIp]]),
    actions: new Map([
      ["svc", new Map([
        ["rate_limit", new Map<string, unknown>([
          ["bucket_key", rateLimit.bucket_key],
          ["limited", rateLimit.limited],
          ["error", new Map([["code", rateLimit.error.code], ["message", rateLimit.error.message]])],
        ])],
      ])],
    ]),
  };
  if (response) {
    bindings.res = new Map<string, unknown>([
      ["status_code", BigInt(response.status)],
      ["headers", headerMap(response.headers)],
    ]);
  }
  return bindings as never;
}

/**
 * The static cost model of CEL expressions. Evaluation is synchronous and cannot be interrupted, so what
 * an expression may cost is decided from its text and syntax tree at load:
 * - size: characters, bracket nesting (before parsing) and nodes (after), which also bound every
 *   recursive walk of the tree;
 * - loops: comprehensions do not nest, and one that iterates over anything but a list literal (a list
 *   that can be as long as the request) may not read the request in its body, so no loop costs
 *   (request size)²;
 * - growth: calls that can return more than they take (`+` on strings or lists, join, format) are
 *   counted, do not feed each other (but `+` chains), are not used in loop bodies, and their literals
 *   are short; replace takes literals and never lengthens, so no chain of calls doubles a
 *   string over and over;
 * - patterns: matches() takes a literal pattern, bounded and compiled here, once.
 */

import type { parse } from "@bufbuild/cel";
import {
  MAX_COMPREHENSION_NESTING,
  MAX_EXPRESSION_LENGTH,
  MAX_EXPRESSION_NESTING,
  MAX_EXPRESSION_NODES,
  MAX_GROWING_CALLS,
  MAX_GROWTH_LITERAL,
} from "./limits.ts";
import { compilePattern, type CompiledPattern } from "./regex.ts";

type Expr = ReturnType<typeof parse>["expr"];

/** Variables and macros that read the exchange: what a loop over a request-sized list may not touch. */
const EXCHANGE_VARIABLES = new Set(["req", "conn", "res", "actions", "endpoint", "time", "vars"]);
const EXCHANGE_MACROS = new Set(["getReqHeader", "hasReqHeader", "getResHeader", "hasResHeader", "getQueryParam", "hasQueryParam"]);
const GROWING = new Set(["_+_", "join", "format"]);
/** The accumulator the parser's macros use; `@result + [x]` in map and filter is the loop itself. */
const ACCUMULATOR = "@result";

const GROWING_NAMES = "+ on strings or lists, join, format";

function display(name: string): string {
  return name === "_+_" ? "+" : name;
}

/**
 * Checks what can be checked before parsing: length, and the nesting of (), [] and {} outside string
 * literals (the parser recurses once per level).
 */
export function checkExpressionText(source: string): string | undefined {
  if (source.length > MAX_EXPRESSION_LENGTH) {
    return `expression exceeds the limit of ${MAX_EXPRESSION_LENGTH} characters (has ${source.length})`;
  }
  let depth = 0;
  for (let i = 0; i < source.length; i++) {
    const char = source[i];
    if (char === "(" || char === "[" || char === "{") {
      if (++depth > MAX_EXPRESSION_NESTING) return `expression exceeds the limit of ${MAX_EXPRESSION_NESTING} nested (), [] and {}`;
    } else if (char === ")" || char === "]" || char === "}") depth = Math.max(0, depth - 1);
    else if (char === "'" || char === '"') i = endOfString(source, i);
  }
  return undefined;
}

/** Index of the closing quote of the string literal opening at `start` (or the end of the text). */
function endOfString(source: string, start: number): number {
  const quote = source[start];
  const triple = source.startsWith(quote.repeat(3), start);
  const close = triple ? quote.repeat(3) : quote;
  const raw = /[rR]/.test(source[start - 1] ?? "") || /[rR]/.test(source[start - 2] ?? "");
  for (let i = start + close.length; i < source.length; i++) {
    if (source[i] === "\\" && !raw) i++;
    else if (source.startsWith(close, i)) return i + close.length - 1;
  }
  return source.length;
}

/** Nodes of the tree, counted without recursion; stops counting past the limit. */
function countNodes(root: Expr | undefined): number {
  let count = 0;
  const stack: Array<Expr | undefined> = [root];
  while (stack.length > 0 && count <= MAX_EXPRESSION_NODES) {
    const expr = stack.pop();
    if (!expr) continue;
    count++;
    stack.push(...children(expr));
  }
  return count;
}

function children(expr: Expr): Array<Expr | undefined> {
  const kind = expr.exprKind;
  switch (kind.case) {
    case "selectExpr":
      return [kind.value.operand];
    case "callExpr":
      return [kind.value.target, ...kind.value.args];
    case "listExpr":
      return kind.value.elements;
    case "structExpr":
      return kind.value.entries.flatMap((entry) => [entry.keyKind.case === "mapKey" ? entry.keyKind.value : undefined, entry.value]);
    case "comprehensionExpr": {
      const c = kind.value;
      return [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result];
    }
    default:
      return [];
  }
}

function stringLiteral(expr: Expr | undefined): string | undefined {
  const kind = expr?.exprKind;
  return kind?.case === "constExpr" && kind.value.constantKind.case === "stringValue" ? kind.value.constantKind.value : undefined;
}

function isNumberLiteral(expr: Expr | undefined): boolean {
  const kind = expr?.exprKind;
  if (kind?.case !== "constExpr") return false;
  const constant = kind.value.constantKind.case;
  return constant === "int64Value" || constant === "uint64Value" || constant === "doubleValue";
}

/** `+` lengthens strings and lists; with a number literal on either side it is arithmetic. */
function isGrowing(name: string, args: readonly Expr[]): boolean {
  if (!GROWING.has(name)) return false;
  if (name !== "_+_") return true;
  const [left, right] = args;
  if (left?.exprKind.case === "identExpr" && left.exprKind.value.name === ACCUMULATOR) return false;
  return !isNumberLiteral(left) && !isNumberLiteral(right);
}

/** Where a node sits: what it may do depends on the loops and growing calls around it. */
interface Context {
  /** Comprehension bodies around the node. */
  readonly loops: number;
  /** Set inside the body of a loop over a list that is not a literal: the body may not read the exchange. */
  readonly requestSizedLoop: boolean;
  readonly locals: ReadonlySet<string>;
  /** The growing call whose operand the node is part of. */
  readonly growingParent?: string;
}

export type CostResult = { ok: true; patterns: ReadonlyMap<string, CompiledPattern> } | { ok: false; message: string };

/** Checks a parsed expression against the cost model; answers the compiled matches() patterns. */
export function checkExpressionCost(root: Expr | undefined): CostResult {
  const nodes = countNodes(root);
  if (nodes > MAX_EXPRESSION_NODES) return fail(`expression exceeds the limit of ${MAX_EXPRESSION_NODES} nodes`);
  const patterns = new Map<string, CompiledPattern>();
  let growing = 0;
  const stack: Array<{ expr: Expr | undefined; context: Context }> = [{ expr: root, context: { loops: 0, requestSizedLoop: false, locals: new Set() } }];
  while (stack.length > 0) {
    const { expr, context } = stack.pop()!;
    if (!expr) continue;
    const kind = expr.exprKind;
    switch (kind.case) {
      case "identExpr": {
        const name = kind.value.name;
        if (context.requestSizedLoop && EXCHANGE_VARIABLES.has(name) && !context.locals.has(name)) return fail(readsRequestInLoop(name));
        break;
      }
      case "callExpr": {
        const { function: name, target, args } = kind.value;
        if (context.requestSizedLoop && EXCHANGE_MACROS.has(name)) return fail(readsRequestInLoop(`${name}()`));
        const problem = checkCall(name, target, args, patterns);
        if (problem) return fail(problem);
        let growingParent = context.growingParent;
        if (isGrowing(name, args)) {
          if (++growing > MAX_GROWING_CALLS) {
            return fail(`expression exceeds the limit of ${MAX_GROWING_CALLS} calls that can lengthen a value (${GROWING_NAMES})`);
          }
          if (context.loops > 0) return fail(`${display(name)} inside a comprehension body would lengthen a value once per element`);
          if (growingParent !== undefined && !(growingParent === "_+_" && name === "_+_")) {
            return fail(
              `${display(growingParent)} must not take the result of ${display(name)}: calls that can lengthen a value do not nest (${GROWING_NAMES})`,
            );
          }
          growingParent = name;
        }
        for (const child of [target, ...args]) stack.push({ expr: child, context: { ...context, growingParent } });
        break;
      }
      case "comprehensionExpr": {
        const c = kind.value;
        if (context.loops >= MAX_COMPREHENSION_NESTING) {
          return fail(`comprehensions (all, exists, exists_one, map, filter) nest deeper than the limit of ${MAX_COMPREHENSION_NESTING}`);
        }
        const locals = new Set([...context.locals, c.iterVar, c.iterVar2, c.accuVar].filter(Boolean));
        const body: Context = {
          loops: context.loops + 1,
          requestSizedLoop: context.requestSizedLoop || c.iterRange?.exprKind.case !== "listExpr",
          locals,
          growingParent: context.growingParent,
        };
        stack.push({ expr: c.iterRange, context }, { expr: c.accuInit, context });
        stack.push({ expr: c.loopCondition, context: body }, { expr: c.loopStep, context: body });
        stack.push({ expr: c.result, context: { ...context, locals } });
        break;
      }
      default:
        for (const child of children(expr)) stack.push({ expr: child, context });
    }
  }
  return { ok: true, patterns };
}

function fail(message: string): CostResult {
  return { ok: false, message };
}

function readsRequestInLoop(what: string): string {
  return `a comprehension over a list that is not a literal must not read ${what} in its body (its cost would grow with the square of the request)`;
}

/** The arguments whose size decides what a call costs must be literals known at load. */
function checkCall(name: string, target: Expr | undefined, args: readonly Expr[], patterns: Map<string, CompiledPattern>): string | undefined {
  switch (name) {
    case "matches": {
      const pattern = stringLiteral(target ? args[0] : args[1]);
      if (pattern === undefined) return "the pattern of matches() must be a string literal, so it is compiled once when the policy loads";
      if (!patterns.has(pattern)) {
        const compiled = compilePattern(pattern);
        if (!compiled.ok) return compiled.message;
        patterns.set(pattern, compiled.pattern);
      }
      return undefined;
    }
    case "replace": {
      const [from, to] = args.map(stringLiteral);
      if (from === undefined || to === undefined) return "replace() takes string literals, so what it can do to a string is known when the policy loads";
      if (to.length > from.length) {
        return `replace() must not lengthen a string: the replacement ${JSON.stringify(to)} is longer than the text it replaces, ${JSON.stringify(from)}`;
      }
      return undefined;
    }
    case "join": {
      if (args.length === 0) return undefined;
      const separator = stringLiteral(args[0]);
      if (separator === undefined || separator.length > MAX_GROWTH_LITERAL) {
        return `the separator of join() must be a string literal of at most ${MAX_GROWTH_LITERAL} characters`;
      }
      return undefined;
    }
    case "format": {
      const format = stringLiteral(target);
      if (format === undefined || format.length > MAX_GROWTH_LITERAL) {
        return `the format string of format() must be a string literal of at most ${MAX_GROWTH_LITERAL} characters`;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

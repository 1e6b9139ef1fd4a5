/**
 * The `from` and `to` of url-rewrite and redirect, as ngrok documents them: `from` an RE2 pattern matched
 * against the whole URL (scheme, host, port, path, query), every match replaced by `to`, whose `$1` / `${1}` /
 * `$name` are the pattern's groups; no `from` replaces the whole URL. Both may interpolate `${…}`, which runs
 * first, as on ngrok; unlike ngrok, what an interpolation writes is taken literally: quoted in `from` (a Host
 * with dots matches only itself) and with its `$` doubled in `to` (request text never names a group).
 */

import { RE2JS } from "re2js";
import { z } from "zod";
import { STRING, STRING_LIST } from "../cel-types.ts";
import type { ActionServices, Exchange } from "../exchange.ts";
import type { PathSegment } from "../issues.ts";
import {
  compileRewritePattern,
  MAX_REWRITE_PATTERN_CHARS,
  MAX_REWRITE_URL_CHARS,
  parseReplacement,
  quoteReplacementText,
  replaceAllBounded,
  type RewritePattern,
} from "../rewrite-regex.ts";
import { splitTemplate } from "../template-syntax.ts";
import type { ActionContext } from "./action.ts";
import { compileFields, FieldRun, type InterpolatedField } from "./interpolated-fields.ts";
import { declareResults, ERROR_SHAPE, noError, type ActionResults, type ResultError } from "./results.ts";

export const fromSchema = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(MAX_REWRITE_PATTERN_CHARS, `must be at most ${MAX_REWRITE_PATTERN_CHARS} characters`)
  .optional()
  .describe("An RE2 pattern matched against the whole URL; absent: the whole URL. May interpolate ${expression}.");

export const toSchema = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(MAX_REWRITE_URL_CHARS, `must be at most ${MAX_REWRITE_URL_CHARS} characters`)
  .describe("What each match becomes: $1, ${1}, $name for the pattern's groups, $$ for a dollar. May interpolate ${expression}.");

/** A field as parts: literal text, and `${…}` compiled one by one so that each value can be quoted. */
type Part = string | InterpolatedField;

/** The pattern when `from` is absent: the whole URL, as one match. */
const WHOLE_URL = compileRewritePattern("(?s)^.*$");

export interface CompiledReplacement {
  /** The URL text after replacement; `replaced` false when `from` matched nothing. */
  apply(exchange: Exchange, services: ActionServices, url: string): ReplacementOutcome;
}

export type ReplacementOutcome =
  | { readonly ok: true; readonly replaced: boolean; readonly text: string; readonly matches: readonly string[] }
  | { readonly ok: false; readonly code: string; readonly message: string };

export type CompiledReplacementResult = { ok: true; replacement: CompiledReplacement } | { ok: false; path: readonly PathSegment[]; message: string };

/** What the last url-rewrite or redirect did (ngrok's `actions.ngrok.url_rewrite.*`, `.redirect.*`). */
export interface UrlReplacementVars {
  /** The first match of `from` and its groups ('' for one that did not take part); empty when nothing matched. */
  matches: string[];
  /** The URL made: the one sent upstream, or the redirect's Location; '' before. */
  url: string;
  /** Why the URL was left as it was (a bound, another host), else ''. */
  error: ResultError;
}

/** The result variables of url-rewrite and redirect, each under its own `name`: the same fields. */
export function urlReplacementResults(name: string): ActionResults<UrlReplacementVars> {
  return declareResults<UrlReplacementVars>(name, { matches: STRING_LIST, url: STRING, error: ERROR_SHAPE }, () => ({
    matches: [],
    url: "",
    error: noError(),
  }));
}

export const URL_TOO_LONG_ERROR = "ERR_REWRITE_URL_TOO_LONG";
export const PATTERN_ERROR = "ERR_REWRITE_PATTERN";

function compileParts(
  path: PathSegment,
  text: string,
  context: ActionContext,
): { ok: true; parts: Part[] } | { ok: false; path: PathSegment[]; message: string } {
  const split = splitTemplate(text);
  if (!split.ok) return { ok: false, path: [path], message: split.message };
  const expressions = split.parts.flatMap((part) => ("expression" in part ? [[[path], `\${${part.expression}}`] as const] : []));
  const compiled = compileFields(expressions, context);
  if (!compiled.ok) return { ok: false, path: [...compiled.path], message: compiled.message };
  let next = 0;
  return { ok: true, parts: split.parts.map((part) => ("literal" in part ? part.literal : compiled.fields[next++])) };
}

/** The parts as text, each interpolated value passed through `literally`; at most `max` characters. */
function render(parts: readonly Part[], run: FieldRun, literally: (value: string) => string, max: number): string {
  let text = "";
  for (const part of parts) {
    const room = max - text.length;
    if (room <= 0) break;
    text += typeof part === "string" ? part : literally(run.render(part, room));
  }
  return text.length > max ? text.slice(0, max + 1) : text;
}

/** Compiles `from` and `to`; a located message when either cannot be (a bad pattern, a bad `${…}`). */
export function compileReplacement(from: string | undefined, to: string, context: ActionContext): CompiledReplacementResult {
  const toParts = compileParts("to", to, context);
  if (!toParts.ok) return toParts;
  let fromParts: Part[] | undefined;
  let fixed: RewritePattern | undefined = WHOLE_URL.ok ? WHOLE_URL.pattern : undefined;
  if (from !== undefined) {
    const compiled = compileParts("from", from, context);
    if (!compiled.ok) return compiled;
    fromParts = compiled.parts;
    // With each ${…} standing for a quoted word: a pattern that can never compile is refused at load.
    const skeleton = compileRewritePattern(compiled.parts.map((part) => (typeof part === "string" ? part : "x")).join(""));
    if (!skeleton.ok) return { ok: false, path: ["from"], message: skeleton.message };
    fixed = compiled.parts.every((part) => typeof part === "string") ? skeleton.pattern : undefined;
  }
  const fixedTo = toParts.parts.every((part) => typeof part === "string") ? parseReplacement(to) : undefined;
  return {
    ok: true,
    replacement: {
      apply(exchange, services, url) {
        if (url.length > MAX_REWRITE_URL_CHARS) {
          return { ok: false, code: URL_TOO_LONG_ERROR, message: `The request URL exceeds the ${MAX_REWRITE_URL_CHARS} characters a rewrite reads.` };
        }
        const run = new FieldRun(exchange, services);
        let pattern = fixed;
        if (!pattern) {
          const source = render(fromParts ?? [], run, (value) => RE2JS.quote(value), MAX_REWRITE_PATTERN_CHARS);
          const compiled = compileRewritePattern(source);
          if (!compiled.ok) return { ok: false, code: PATTERN_ERROR, message: compiled.message };
          pattern = compiled.pattern;
        }
        const replacement = fixedTo ?? parseReplacement(render(toParts.parts, run, quoteReplacementText, MAX_REWRITE_URL_CHARS * 2));
        return replaceAllBounded(pattern, url, replacement, exchange.budget, MAX_REWRITE_URL_CHARS);
      },
    },
  };
}

/** A scheme followed by an empty authority (`https:///…`): what is left after it is a path. */
export const EMPTY_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(?=[/\\])/;

/**
 * The replaced text as a URL, relative ones resolved against the request's. `https:///path`, which a
 * replacement of `${req.url.authority}/…` by a path leaves (ngrok's own example), is that path on the
 * request's origin, whatever it begins with: `https:////evil.example` is the path `//evil.example` on the
 * request's host, never the host evil.example (resolving `//evil.example` against the request would be).
 * Undefined when it is no URL.
 */
export function resolveReplaced(text: string, request: URL): URL | undefined {
  const emptyAuthority = EMPTY_AUTHORITY.exec(text);
  try {
    // The origin ends at the first `/`, so the path appended to it can name no other host.
    if (emptyAuthority) return new URL(request.origin + text.slice(emptyAuthority[0].length));
    return new URL(text, request);
  } catch {
    return undefined;
  }
}

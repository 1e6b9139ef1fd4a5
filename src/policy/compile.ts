/** Text → validated document → compiled policy. Everything that can be wrong is found here, never per request. */

import { compileExpression, type CompiledExpression, expressionCompiler } from "./cel.ts";
import { type ActionDefinition, type ActionRegistry, actionRegistry, type CompiledAction } from "./actions/index.ts";
import { isConfigProblem } from "./actions/action.ts";
import { measureDocument } from "./document-bounds.ts";
import type { Phase } from "./exchange.ts";
import { formatPath, type PathSegment, type PolicyIssue } from "./issues.ts";
import { MAX_ENTRIES_PER_PHASE, MAX_OPERATOR_POLICY_BYTES, MAX_PATTERNS_PER_POLICY, MAX_POLICY_BYTES, MAX_POLICY_EXPRESSION_CHARS } from "./limits.ts";
import { PHASE_KEYS, trafficPolicySchema, trafficPolicySchemaOf, type EntryDocument } from "./schema.ts";
import { readSource } from "./source.ts";
import { interpolatedChars } from "./template-syntax.ts";
import { fromZodIssues } from "./zod-issues.ts";

export interface CompiledEntry {
  readonly name?: string;
  readonly expressions: readonly CompiledExpression[];
  readonly actions: readonly CompiledAction[];
}

export interface CompiledPolicy {
  readonly inbound: readonly CompiledEntry[];
  readonly outbound: readonly CompiledEntry[];
}

export const emptyPolicy: CompiledPolicy = Object.freeze({ inbound: [], outbound: [] });

/** `bytes`: the document's size as JSON, from which a cache estimates what the compiled policy holds. */
export type CompileResult = { ok: true; policy: CompiledPolicy; bytes: number } | { ok: false; issues: PolicyIssue[] };

export interface CompileOptions {
  readonly file?: string;
  /** Line of a path inside the file, when the file is known. */
  readonly lineOf?: (path: readonly PathSegment[]) => number | undefined;
  /** Where the policy sits inside its file, e.g. ["edges", 0, "routes", 1, "traffic_policy"]. */
  readonly prefix?: readonly PathSegment[];
  /**
   * Who wrote the policy: a tenant (sent with a tunnel; the default) or the operator (a file under
   * policies/). Operator documents may be larger (a custom-response body may be an HTML page); every
   * other bound is the same.
   */
  readonly origin?: "tenant" | "operator";
  /** The action types the policy may use; default: the gateway's (actions/index.ts). */
  readonly actions?: ActionRegistry;
}

/** Validates a parsed policy value and compiles its expressions and actions. */
export function compilePolicy(value: unknown, options: CompileOptions = {}): CompileResult {
  const prefix = options.prefix ?? [];
  const place = (path: PathSegment[]) => ({ file: options.file, line: options.lineOf?.(path) });
  const at = (path: PathSegment[], message: string): CompileResult => {
    const full = [...prefix, ...path];
    return { ok: false, issues: [{ ...place(full), path: full, message }] };
  };
  // Size and depth first, without recursion: everything after this may walk the document recursively.
  const measured = measureDocument(value ?? {}, options.origin === "operator" ? MAX_OPERATOR_POLICY_BYTES : MAX_POLICY_BYTES);
  if (!measured.ok) return at(measured.path, measured.message);
  const mixed = mixedPhaseKey(value);
  if (mixed) return at([mixed], "cannot be mixed with inbound/outbound in one document: use on_http_request/on_http_response or inbound/outbound");
  const registry = options.actions ?? actionRegistry;
  const schema = registry === actionRegistry ? trafficPolicySchema : trafficPolicySchemaOf(registry);
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) {
    // The expressions the schema found no fault with are compiled all the same: one run reports everything.
    const schemaIssues = fromZodIssues(parsed.error.issues, value, place, prefix);
    const celIssues = expressionIssues(value, parsed.error.issues, place, prefix, registry);
    return { ok: false, issues: [...schemaIssues, ...celIssues].sort(byLine) };
  }
  const style = parsed.data.on_http_request !== undefined || parsed.data.on_http_response !== undefined ? "ngrok" : "tollgate";
  const keys = PHASE_KEYS[style];
  const documentEntries = { inbound: parsed.data[keys.inbound] ?? [], outbound: parsed.data[keys.outbound] ?? [] };
  const allEntries = [...documentEntries.inbound, ...documentEntries.outbound];
  // `${…}` interpolations in action fields are expressions like any other.
  const expressionChars =
    allEntries.flatMap((entry) => entry.expressions ?? []).reduce((sum, source) => sum + source.length, 0) +
    allEntries.reduce((sum, entry) => sum + interpolatedChars(entry.actions), 0);
  if (expressionChars > MAX_POLICY_EXPRESSION_CHARS) {
    return at([], `expressions together exceed the limit of ${MAX_POLICY_EXPRESSION_CHARS} characters per policy (have ${expressionChars})`);
  }

  const issues: PolicyIssue[] = [];
  // Entries and actions alike check their expressions against `registry`.
  const compiler = expressionCompiler(registry);
  // Actions counted against their type's per-policy bound, both phases together.
  const counted = new Map<ActionDefinition, number>();
  const compilePhase = (phase: Phase, entries: readonly EntryDocument[]): CompiledEntry[] =>
    entries.map((entry, entryIndex) => {
      // Paths name the phase as the document does; names derived from positions use the canonical phase,
      // so a document behaves (and counts in the same buckets) whichever style it is written in.
      const documentPath = [...prefix, keys[phase], entryIndex];
      const expressions: CompiledExpression[] = [];
      (entry.expressions ?? []).forEach((source, index) => {
        const result = compiler.condition(source, phase);
        if (result.ok) expressions.push(result.expression);
        else {
          const path = [...documentPath, "expressions", index];
          issues.push({ ...place(path), path, message: result.message });
        }
      });
      const actions = (entry.actions as Array<{ type: string; config?: unknown }>).map((action, actionIndex) => {
        const definition = registry.definitions.get(action.type)!;
        const position = formatPath([phase, entryIndex, "actions", actionIndex]);
        const config = definition.config.parse(action.config ?? {});
        const bound = definition.perPolicy;
        if (bound?.counts(config)) {
          const count = (counted.get(definition) ?? 0) + 1;
          counted.set(definition, count);
          if (count === bound.max + 1) {
            const path = [...documentPath, "actions", actionIndex, "config", ...bound.path];
            issues.push({ ...place(path), path, message: bound.message });
          }
        }
        const context = { phase, position, origin: options.origin, expressions: compiler };
        const compiled = definition.compile(config, context);
        if (!isConfigProblem(compiled)) return compiled;
        const path = [...documentPath, "actions", actionIndex, "config", ...compiled.path];
        issues.push({ ...place(path), path, message: compiled.message });
        // The policy does not load; this step is never run.
        return { type: action.type, run: () => undefined };
      });
      return Object.freeze({ name: entry.name, expressions, actions });
    });

  const policy = Object.freeze({
    inbound: Object.freeze(compilePhase("inbound", documentEntries.inbound)),
    outbound: Object.freeze(compilePhase("outbound", documentEntries.outbound)),
  });
  if (issues.length > 0) return { ok: false, issues };
  const patterns = [...policy.inbound, ...policy.outbound].flatMap((entry) => entry.expressions).reduce((sum, e) => sum + e.patterns, 0);
  if (patterns > MAX_PATTERNS_PER_POLICY) return at([], `matches() patterns exceed the limit of ${MAX_PATTERNS_PER_POLICY} per policy (have ${patterns})`);
  return { ok: true, policy, bytes: measured.bytes };
}

const byLine = (a: PolicyIssue, b: PolicyIssue) => (a.line ?? Number.MAX_SAFE_INTEGER) - (b.line ?? Number.MAX_SAFE_INTEGER);

/**
 * The CEL issues of a document the schema refused: the expressions of every entry whose `expressions` the
 * schema did not fault, bounded as a valid document's are (entries per phase, characters together).
 */
function expressionIssues(
  value: unknown,
  schemaIssues: readonly { readonly path: readonly PropertyKey[] }[],
  place: (path: PathSegment[]) => Pick<PolicyIssue, "file" | "line">,
  prefix: readonly PathSegment[],
  actions: ActionRegistry,
): PolicyIssue[] {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [];
  const faulted = new Set(schemaIssues.filter((issue) => issue.path.length >= 3).map((issue) => issue.path.slice(0, 3).join("\u0000")));
  const phases: Array<[key: string, phase: Phase]> = Object.values(PHASE_KEYS).flatMap((keys) => [
    [keys.inbound, "inbound"] as [string, Phase],
    [keys.outbound, "outbound"] as [string, Phase],
  ]);
  const candidates: Array<{ path: PathSegment[]; source: string; phase: Phase }> = [];
  for (const [key, phase] of phases) {
    const entries = (value as Record<string, unknown>)[key];
    if (!Array.isArray(entries)) continue;
    entries.slice(0, MAX_ENTRIES_PER_PHASE).forEach((entry, index) => {
      const expressions = entry !== null && typeof entry === "object" ? (entry as Record<string, unknown>).expressions : undefined;
      if (!Array.isArray(expressions) || faulted.has([key, index, "expressions"].join("\u0000"))) return;
      // Unfaulted, they are the schema's: at most MAX_EXPRESSIONS_PER_ENTRY non-empty strings.
      for (const [position, source] of (expressions as string[]).entries()) {
        candidates.push({ path: [...prefix, key, index, "expressions", position], source, phase });
      }
    });
  }
  const chars = candidates.reduce((sum, candidate) => sum + candidate.source.length, 0);
  if (chars > MAX_POLICY_EXPRESSION_CHARS) {
    const path = [...prefix];
    return [{ ...place(path), path, message: `expressions together exceed the limit of ${MAX_POLICY_EXPRESSION_CHARS} characters per policy (have ${chars})` }];
  }
  return candidates.flatMap(({ path, source, phase }) => {
    const result = compileExpression(source, phase, { actions });
    return result.ok ? [] : [{ ...place(path), path, message: result.message }];
  });
}

/** The ngrok-style phase key of a document that also has a Tollgate-style one, if it mixes them. */
function mixedPhaseKey(value: unknown): string | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const has = (key: string) => Object.hasOwn(value, key);
  if (!Object.values(PHASE_KEYS.tollgate).some(has)) return undefined;
  return Object.values(PHASE_KEYS.ngrok).find(has);
}

/** Reads and compiles one operator policy file (YAML or JSON) from policies/. */
export function loadPolicy(text: string, file: string): CompileResult {
  const source = readSource(text, file);
  if (!source.ok) return source;
  return compilePolicy(source.document.value, { file, lineOf: source.document.lineOf, origin: "operator" });
}

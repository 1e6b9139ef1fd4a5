/** Text → validated document → compiled policy. Everything that can be wrong is found here, never per request. */

import { compileExpression, type CompiledExpression } from "./cel.ts";
import type { CompiledAction } from "./actions/index.ts";
import type { Phase } from "./exchange.ts";
import { formatPath, type PathSegment, type PolicyIssue } from "./issues.ts";
import { actionDefinitions, trafficPolicySchema, type EntryDocument } from "./schema.ts";
import { readSource } from "./source.ts";
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

export type CompileResult = { ok: true; policy: CompiledPolicy } | { ok: false; issues: PolicyIssue[] };

export interface CompileOptions {
  readonly file?: string;
  /** Line of a path inside the file, when the file is known. */
  readonly lineOf?: (path: readonly PathSegment[]) => number | undefined;
  /** Where the policy sits inside its file, e.g. ["edges", 0, "routes", 1, "traffic_policy"]. */
  readonly prefix?: readonly PathSegment[];
}

/** Validates a parsed policy value and compiles its expressions and actions. */
export function compilePolicy(value: unknown, options: CompileOptions = {}): CompileResult {
  const prefix = options.prefix ?? [];
  const place = (path: PathSegment[]) => ({ file: options.file, line: options.lineOf?.(path) });
  const parsed = trafficPolicySchema.safeParse(value ?? {});
  if (!parsed.success) return { ok: false, issues: fromZodIssues(parsed.error.issues, value, place, prefix) };

  const issues: PolicyIssue[] = [];
  const compilePhase = (phase: Phase, entries: readonly EntryDocument[] = []): CompiledEntry[] =>
    entries.map((entry, entryIndex) => {
      const expressions: CompiledExpression[] = [];
      (entry.expressions ?? []).forEach((source, index) => {
        const result = compileExpression(source, phase);
        if (result.ok) expressions.push(result.expression);
        else {
          const path = [...prefix, phase, entryIndex, "expressions", index];
          issues.push({ ...place(path), path, message: result.message });
        }
      });
      const actions = (entry.actions as Array<{ type: string; config?: unknown }>).map((action, actionIndex) => {
        const definition = actionDefinitions.get(action.type)!;
        const position = formatPath([phase, entryIndex, "actions", actionIndex]);
        return definition.compile(definition.config.parse(action.config ?? {}), { phase, position });
      });
      return Object.freeze({ name: entry.name, expressions, actions });
    });

  const policy = Object.freeze({
    inbound: Object.freeze(compilePhase("inbound", parsed.data.inbound)),
    outbound: Object.freeze(compilePhase("outbound", parsed.data.outbound)),
  });
  return issues.length > 0 ? { ok: false, issues } : { ok: true, policy };
}

/** Reads and compiles one policy file (YAML or JSON). */
export function loadPolicy(text: string, file: string): CompileResult {
  const source = readSource(text, file);
  if (!source.ok) return source;
  return compilePolicy(source.document.value, { file, lineOf: source.document.lineOf });
}

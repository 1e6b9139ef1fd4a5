/** Reads YAML or JSON text into a plain value and keeps a map from document paths to line numbers. */

import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Node } from "yaml";
import type { PathSegment, PolicyIssue } from "./issues.ts";

export interface SourceDocument {
  readonly file: string;
  readonly value: unknown;
  /** 1-based line of the node at `path` (or of the nearest ancestor that exists). */
  lineOf(path: readonly PathSegment[]): number | undefined;
}

export type SourceResult = { ok: true; document: SourceDocument } | { ok: false; issues: PolicyIssue[] };

/** Parses `text` (YAML 1.2, which includes JSON); syntax errors come back as issues with lines. */
export function readSource(text: string, file: string): SourceResult {
  const lineCounter = new LineCounter();
  // logLevel "error": a map key that is itself a collection is reported as an unknown key; the library
  // would also print a process warning about it.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true, logLevel: "error" });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      issues: doc.errors.map((error) => ({
        file,
        line: lineCounter.linePos(error.pos[0]).line,
        path: [],
        message: `invalid ${/\.json$/i.test(file) ? "JSON/YAML" : "YAML"}: ${error.message.split("\n")[0]}`,
      })),
    };
  }
  const lineOf = (path: readonly PathSegment[]): number | undefined => {
    let node: unknown = doc.contents;
    let offset = (doc.contents as Node | null)?.range?.[0];
    for (const segment of path) {
      if (isMap(node)) {
        const pair = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === String(segment));
        if (!pair) break;
        offset = (pair.key as Node).range?.[0] ?? offset;
        node = pair.value;
        if ((node as Node | null)?.range && !isMap(node) && !isSeq(node)) offset = (node as Node).range![0];
      } else if (isSeq(node) && typeof segment === "number") {
        const item = node.items[segment];
        if (!item) break;
        node = item;
        offset = (item as Node).range?.[0] ?? offset;
      } else break;
    }
    return offset === undefined ? undefined : lineCounter.linePos(offset).line;
  };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // toJS refuses alias bombs ("billion laughs") by throwing; a policy file must never crash the loader.
    return { ok: false, issues: [{ file, path: [], message: `invalid YAML: ${(error as Error).message}` }] };
  }
  return { ok: true, document: { file, value, lineOf } };
}

/**
 * Size and depth of a policy document, measured without recursion: a document may come from a tenant
 * (100,000 nested lists fit in one frame) and must be refused with a message, never a stack overflow.
 */

import type { PathSegment } from "./issues.ts";
import { MAX_POLICY_DEPTH } from "./limits.ts";

export type DocumentBounds = { ok: true; bytes: number } | { ok: false; path: PathSegment[]; message: string };

/** Bytes of a scalar written as JSON (strings approximately: escapes beyond quotes are not counted). */
function scalarBytes(value: unknown): number {
  if (typeof value === "string") return value.length + 2;
  if (value === undefined) return 0;
  return String(value).length;
}

/**
 * Walks `value` depth-first with an explicit stack and stops at the first bound exceeded; on success
 * answers the document's size as JSON, which the tunnel policy cache uses to estimate compiled size.
 */
export function measureDocument(value: unknown, maxBytes: number): DocumentBounds {
  let bytes = 0;
  const stack: Array<{ value: unknown; path: PathSegment[] }> = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: node, path } = stack.pop()!;
    if (node === null || typeof node !== "object") bytes += scalarBytes(node);
    else {
      if (path.length >= MAX_POLICY_DEPTH) {
        return { ok: false, path, message: `exceeds the limit of ${MAX_POLICY_DEPTH} nested maps and lists` };
      }
      const entries: Array<[PathSegment, unknown]> = Array.isArray(node)
        ? Array.from({ length: node.length }, (_, index) => [index, node[index]])
        : Object.entries(node);
      bytes += 2 + Math.max(0, entries.length - 1);
      if (bytes > maxBytes) break;
      for (const [key, child] of entries) {
        if (typeof key === "string") bytes += key.length + 3;
        stack.push({ value: child, path: [...path, key] });
      }
    }
    if (bytes > maxBytes) break;
  }
  if (bytes > maxBytes) return { ok: false, path: [], message: `exceeds the limit of ${maxBytes} bytes for a policy (as JSON)` };
  return { ok: true, bytes };
}

/**
 * How deeply a policy text nests, read before YAML parses it. The YAML library composes nested collections by
 * recursion: a few thousand `{` (or `- - -`) in a body of a few KiB overflow the stack, and past that a regular
 * expression compiled at the stack's limit aborts the whole process (V8: "RegExpCompiler Allocation failed").
 * The library's lexer is a loop, and its tokens tell quoted text and comments apart, so this count is exact
 * for flow collections and, for block ones, counts the indicators that open a level on the same line.
 */

import { CST, Lexer } from "yaml";

/** Whether `text` nests at most `limit` levels; stops reading at the first level past it. */
export function nestsWithin(text: string, limit: number): boolean {
  let flow = 0;
  let onLine = 0;
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    if (type === "flow-map-start" || type === "flow-seq-start") flow++;
    else if (type === "flow-map-end" || type === "flow-seq-end") flow = Math.max(0, flow - 1);
    else if (type === "newline") onLine = 0;
    else if (type === "seq-item-ind" || type === "explicit-key-ind" || type === "map-value-ind") onLine++;
    if (flow + onLine > limit) return false;
  }
  return true;
}

/**
 * The syntax of `${expression}` interpolation in action fields: where each expression starts and ends. An
 * expression ends at the first `}` outside its string literals and its own `{…}` maps, so `${'}'}` and
 * `${{'a': 1}['a']}` are one expression each. ngrok documents no escape for a literal `${`; there is none
 * here either (write `${'${'}`).
 */

export type TemplatePart = { readonly literal: string } | { readonly expression: string };

export type SplitTemplate = { ok: true; parts: TemplatePart[] } | { ok: false; message: string };

const IDENTIFIER_CHAR = /[A-Za-z0-9_]/;

/** True when the quote at `at` opens a raw string (`r'…'`, `R"…"`, `br'…'`), in which `\` escapes nothing. */
function isRaw(text: string, at: number): boolean {
  let start = at;
  while (start > 0 && at - start < 2 && /[rRbB]/.test(text[start - 1])) start--;
  if (start > 0 && IDENTIFIER_CHAR.test(text[start - 1])) return false;
  return /[rR]/.test(text.slice(start, at));
}

/** Index just past the string literal whose opening quote is at `at`, or -1 when it never closes. */
function endOfString(text: string, at: number): number {
  const quote = text[at];
  const triple = text.startsWith(quote.repeat(3), at);
  const close = triple ? quote.repeat(3) : quote;
  const raw = isRaw(text, at);
  for (let i = at + close.length; i < text.length; i++) {
    if (text[i] === "\\" && !raw) {
      i++;
      continue;
    }
    if (!triple && (text[i] === "\n" || text[i] === "\r")) return -1;
    if (text.startsWith(close, i)) return i + close.length;
  }
  return -1;
}

/** Index of the `}` that closes the expression starting at `from`, or a message saying why there is none. */
function endOfExpression(text: string, from: number): number | string {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const char = text[i];
    if (char === "'" || char === '"') {
      const end = endOfString(text, i);
      if (end < 0) return `unterminated string literal in \${…} at character ${i + 1}`;
      i = end - 1;
    } else if (char === "{") depth++;
    else if (char === "}") {
      if (depth === 0) return i;
      depth--;
    }
  }
  return `unterminated \${ at character ${from - 1}: no closing }`;
}

/** Splits `text` into literal text and the sources of its `${…}` expressions, in order. */
export function splitTemplate(text: string): SplitTemplate {
  const parts: TemplatePart[] = [];
  let at = 0;
  while (at < text.length) {
    const open = text.indexOf("${", at);
    if (open < 0) break;
    if (open > at) parts.push({ literal: text.slice(at, open) });
    const close = endOfExpression(text, open + 2);
    if (typeof close === "string") return { ok: false, message: close };
    const expression = text.slice(open + 2, close);
    if (expression.trim() === "") return { ok: false, message: `empty \${} at character ${open + 1}` };
    parts.push({ expression });
    at = close + 1;
  }
  if (at < text.length) parts.push({ literal: text.slice(at) });
  return { ok: true, parts };
}

/**
 * Characters of the `${…}` expressions in every string of `value` (an entry's actions), so that they count
 * towards the policy's bound on expression characters with the entries' own: parsing and checking cost per
 * character wherever an expression is written. A string whose `${` never closes counts nothing (the action
 * that interpolates it refuses it). Walks without recursion; the document's size was bounded before.
 */
export function interpolatedChars(value: unknown): number {
  let chars = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") {
      if (!item.includes("${")) continue;
      const split = splitTemplate(item);
      if (split.ok) for (const part of split.parts) if ("expression" in part) chars += part.expression.length;
    } else if (item !== null && typeof item === "object") {
      // one push per element: spreading a list of 100,000 elements into push() overflows the call's arguments
      for (const element of Array.isArray(item) ? item : Object.values(item)) stack.push(element);
    }
  }
  return chars;
}

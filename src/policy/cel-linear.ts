/**
 * Replacements for @bufbuild/cel functions that cost far more than what they take and produce (quadratic,
 * or one character at a time), so that the run-time meter (cel-meter.ts), which charges by size, charges
 * what the work really costs.
 */

import { type CelList, celFunc, celList, celMethod, CelScalar, listType } from "@bufbuild/cel";

const { STRING, INT, DYN } = CelScalar;
const DYN_LIST = listType(DYN);

/**
 * `text.replace(old, new[, n])` in one pass: the library rebuilds the whole string once per occurrence (25 ms
 * for a 16 KB path). `n` < 0 or absent replaces every occurrence, as CEL specifies; 0 none.
 */
function replaceLinear(text: string, old: string, replacement: string, n?: bigint): string {
  if (n === 0n || old === "") return old === "" && replacement !== "" && n !== 0n ? insertEverywhere(text, replacement, n) : text;
  if (n === undefined || n < 0n) return text.replaceAll(old, replacement);
  const limit = Number(n);
  const parts: string[] = [];
  let from = 0;
  for (let count = 0; count < limit; count++) {
    const index = text.indexOf(old, from);
    if (index < 0) break;
    parts.push(text.slice(from, index), replacement);
    from = index + old.length;
  }
  parts.push(text.slice(from));
  return parts.join("");
}

/** An empty `old` matches before every code point and at the end (as CEL's Go implementation does). */
function insertEverywhere(text: string, insert: string, n: bigint | undefined): string {
  const points = Array.from(text);
  const limit = n === undefined || n < 0n ? points.length + 1 : Math.min(Number(n), points.length + 1);
  const parts: string[] = [];
  for (let i = 0; i < points.length; i++) parts.push(i < limit ? insert : "", points[i]);
  if (points.length < limit) parts.push(insert);
  return parts.join("");
}

/** ASCII letters only, as CEL's lowerAscii/upperAscii: the library appends one character at a time. */
const lowerAscii = (text: string) => text.replace(/[A-Z]+/g, (run) => run.toLowerCase());
const upperAscii = (text: string) => text.replace(/[a-z]+/g, (run) => run.toUpperCase());

/**
 * `list.join([separator])` in one pass: the library appends element by element to one string, which costs
 * ~25 ms for the 16,384 one-character strings of a split('') of a header (90 ns a unit).
 */
function joinLinear(list: CelList, separator = ""): string {
  const parts: string[] = [];
  for (const item of list) {
    if (typeof item !== "string") throw new Error("invalid argument to function join: list contains non-string value");
    parts.push(item);
  }
  return parts.join(separator);
}

/** Code points of a string without making an array of them (the library's size() spreads the string). */
function codePoints(text: string): bigint {
  let count = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return BigInt(count);
}

export const linearFunctions = [
  celFunc("size", [STRING], INT, (text) => codePoints(text)),
  celMethod("size", STRING, [], INT, function (this: string) {
    return codePoints(this);
  }),
  celMethod("lowerAscii", STRING, [], STRING, function (this: string) {
    return lowerAscii(this);
  }),
  celMethod("upperAscii", STRING, [], STRING, function (this: string) {
    return upperAscii(this);
  }),
  celMethod("join", DYN_LIST, [], STRING, function (this: CelList) {
    return joinLinear(this);
  }),
  celMethod("join", DYN_LIST, [STRING], STRING, function (this: CelList, separator) {
    return joinLinear(this, separator);
  }),
  // The library's `+` on lists nests lazily, so a map() or filter() over n elements builds a chain n deep
  // that costs n² to read; a flat copy costs what the meter charges for it (the elements taken and produced).
  celFunc("_+_", [DYN_LIST, DYN_LIST], DYN_LIST, (left, right) => celList([...left, ...right])),
  celMethod("replace", STRING, [STRING, STRING], STRING, function (this: string, old, replacement) {
    return replaceLinear(this, old, replacement);
  }),
  celMethod("replace", STRING, [STRING, STRING, INT], STRING, function (this: string, old, replacement, n) {
    return replaceLinear(this, old, replacement, n);
  }),
];

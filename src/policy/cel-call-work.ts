/**
 * What a call costs beyond the sizes the meter charges for every call (cel-meter.ts): functions whose work is
 * far more than a unit per character or element taken and produced, or grows with one argument times another.
 * Each weight is chosen so that a unit of the function's worst case costs at most ~50 ns in Node, measured
 * by `npm run bench:cel-cost` (the figures are in docs/security.md).
 */

import { isCelList, isCelMap } from "@bufbuild/cel";
import { isReflectMessage } from "@bufbuild/protobuf/reflect";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";

/** Units per address or range parsed by inCidrRange(s): ipaddr.js spends microseconds on each, however short. */
export const ADDRESS_PARSE_UNITS = 256;
/** Units per call that converts a time in an IANA time zone: the library builds an Intl.DateTimeFormat each time (~110 µs). */
export const TIME_ZONE_UNITS = 8192;
/** Units per timestamp getter: the library builds two or three Date objects each time. */
const DATE_UNITS = 256;
/** Units per timestamp() or duration() of a string: the protobuf JSON parser and a message built. */
const TIME_PARSE_UNITS = 128;
/** Units per character of a string int() or uint() converts, on top of the character: BigInt parsing and the range check. */
export const INTEGER_PARSE_UNITS_PER_CHAR = 2;

/** The library's timestamp getters, which take an optional time zone. */
const TIME_GETTERS = new Set([
  "getFullYear",
  "getMonth",
  "getDayOfYear",
  "getDayOfMonth",
  "getDate",
  "getDayOfWeek",
  "getHours",
  "getMinutes",
  "getSeconds",
  "getMilliseconds",
]);
/** A fixed offset, which the library converts without Intl (its own pattern). */
const FIXED_OFFSET = /^[+-]?\d\d:\d\d$/;

/**
 * Units per `%f` placeholder (with or without a precision) a format string holds: the library builds an
 * Intl.NumberFormat for each (40–200 µs in Node).
 */
export const FLOAT_FORMAT_UNITS = 4096;
/**
 * Units per comparison when `format` prints a map: the library sorts its entries with localeCompare (about 0.5 µs
 * a comparison, n log n of them: 26 ms for a map of 4,000 headers).
 */
export const MAP_SORT_UNITS_PER_COMPARE = 16;
/** Values a format's argument is walked through for the maps it prints, at most (the meter's own caps stop earlier). */
const MAX_FORMAT_WALK = 100_000;

const FLOAT_PLACEHOLDER = /%(?:\.\d+)?f/g;

/** What `format` costs beyond its sizes: an Intl formatter per `%f`, and the sort of every map it prints. */
function formatWork(target: unknown, args: readonly unknown[]): number {
  let units = typeof target === "string" ? (target.match(FLOAT_PLACEHOLDER)?.length ?? 0) * FLOAT_FORMAT_UNITS : 0;
  const pending: unknown[] = [args[0]];
  for (let walked = 0; pending.length > 0 && walked < MAX_FORMAT_WALK; walked++) {
    const value = pending.pop();
    if (isCelList(value)) for (const element of value) pending.push(element);
    else if (isCelMap(value)) {
      const size = value.size;
      units += size > 1 ? Math.ceil(size * Math.log2(size)) * MAP_SORT_UNITS_PER_COMPARE : 0;
      for (const [, element] of value.entries()) pending.push(element);
    }
  }
  return units;
}

/** Elements of a list or map argument (0 for anything else). */
function elements(value: unknown): number {
  return isCelList(value) || isCelMap(value) ? value.size : 0;
}

/** Units a call of `name` costs beyond CALL_UNITS and the sizes of what it takes and produces. */
export function extraWork(name: string, target: unknown, args: readonly unknown[]): number {
  switch (name) {
    // V8's lastIndexOf searches backwards naively, text × pattern characters (777 ms for one call on
    // header-sized strings), where indexOf is linear.
    case "lastIndexOf":
      return typeof target === "string" && typeof args[0] === "string" ? target.length * args[0].length : 0;
    case "inCidrRange":
      return 2 * ADDRESS_PARSE_UNITS;
    case "inCidrRanges":
      return ADDRESS_PARSE_UNITS * (1 + elements(args[1]));
    case "int":
    case "uint":
      return typeof args[0] === "string" ? args[0].length * INTEGER_PARSE_UNITS_PER_CHAR : 0;
    case "format":
      return formatWork(target, args);
    case "timestamp":
    case "duration":
      return typeof args[0] === "string" ? TIME_PARSE_UNITS : 0;
    default:
      if (!TIME_GETTERS.has(name) || !isReflectMessage(target, TimestampSchema)) return 0;
      return typeof args[0] === "string" && !FIXED_OFFSET.test(args[0]) ? DATE_UNITS + TIME_ZONE_UNITS : DATE_UNITS;
  }
}

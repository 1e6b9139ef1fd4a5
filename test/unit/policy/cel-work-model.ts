/**
 * The work model the CEL budget tests hold the meter to: the real work of an evaluation, counted where it
 * happens (inside ipaddr.js, URLSearchParams, Headers and Intl) rather than timed, so the tests depend on no
 * machine's speed. Each kind of work is weighed in units by a stated constant: what it costs in Node next
 * to a unit of the meter (a character scanned), from `npm run bench:cel-cost` and docs/security.md. The meter
 * must charge at least what the model counts; the bench checks that a unit really costs ≲ 50 ns.
 */

import ipaddr from "ipaddr.js";

/** Units each kind of work is worth. */
const WORK_WEIGHTS = {
  /** A character handed to an ipaddr.js parser. */
  parsedChar: 1,
  /** One ipaddr.js parse, whatever its length: 3–16 µs in Node, ~100 units at ≤ 50 ns a unit. */
  parse: 100,
  /** A query parameter getAll() or has() goes past (a string compare). */
  queryParamScanned: 2,
  /** A header an iteration of Headers goes past (it sorts and copies them all). */
  headerIterated: 8,
  /** An Intl.DateTimeFormat built (~110 µs in Node): a conversion to an IANA time zone. */
  timeZoneFormat: 2000,
  /** An Intl.NumberFormat built (40–200 µs in Node): a `%f` of format(). */
  numberFormat: 2000,
  /** A localeCompare (~0.5 µs in Node): format() sorting a map's entries. */
  localeCompare: 10,
} as const;

interface WorkCounts {
  parsedChars: number;
  parses: number;
  queryParamsScanned: number;
  headersIterated: number;
  timeZoneFormats: number;
  numberFormats: number;
  localeCompares: number;
}

export interface WorkModel {
  readonly counts: WorkCounts;
  /** The work counted so far, in units (WORK_WEIGHTS). */
  units(): number;
  reset(): void;
  /** Puts back what was instrumented. */
  restore(): void;
}

const zero = (): WorkCounts => ({
  parsedChars: 0,
  parses: 0,
  queryParamsScanned: 0,
  headersIterated: 0,
  timeZoneFormats: 0,
  numberFormats: 0,
  localeCompares: 0,
});

/** Instruments the libraries the CEL functions call; call `restore()` when done (afterAll). */
export function instrumentWork(): WorkModel {
  const counts = zero();
  // Replaced in place, not with vi.spyOn: the test config restores every mock before each test. Every
  // parse of ipaddr.js (parse, parseCIDR, isValid, either family) goes through a family's parser.
  /** The families with their text parsers, which ipaddr.d.ts leaves out. */
  type Family = { parser: (this: unknown, text: string) => unknown };
  const families = [ipaddr.IPv4, ipaddr.IPv6] as unknown as Family[];
  const parsers = families.map((family) => family.parser);
  families.forEach((family, i) => {
    const parser = parsers[i]!;
    family.parser = function (this: unknown, text: string) {
      counts.parses++;
      counts.parsedChars += text.length;
      return parser.call(this, text);
    };
  });
  const { getAll, has } = URLSearchParams.prototype;
  URLSearchParams.prototype.getAll = function (this: URLSearchParams, name: string) {
    counts.queryParamsScanned += this.size;
    return getAll.call(this, name);
  };
  URLSearchParams.prototype.has = function (this: URLSearchParams, name: string, value?: string) {
    counts.queryParamsScanned += this.size;
    return value === undefined ? has.call(this, name) : has.call(this, name, value);
  };
  const iterate = Headers.prototype[Symbol.iterator];
  Headers.prototype[Symbol.iterator] = function (this: Headers) {
    for (const _ of iterate.call(this)) counts.headersIterated++;
    return iterate.call(this);
  };
  const DateTimeFormat = Intl.DateTimeFormat;
  const counting = function (this: unknown, ...args: ConstructorParameters<typeof Intl.DateTimeFormat>) {
    counts.timeZoneFormats++;
    return new DateTimeFormat(...args);
  } as unknown as typeof Intl.DateTimeFormat;
  Object.assign(counting, { supportedLocalesOf: DateTimeFormat.supportedLocalesOf });
  Intl.DateTimeFormat = counting;
  const NumberFormat = Intl.NumberFormat;
  const countingNumbers = function (this: unknown, ...args: ConstructorParameters<typeof Intl.NumberFormat>) {
    counts.numberFormats++;
    return new NumberFormat(...args);
  } as unknown as typeof Intl.NumberFormat;
  Object.assign(countingNumbers, { supportedLocalesOf: NumberFormat.supportedLocalesOf });
  Intl.NumberFormat = countingNumbers;
  const { localeCompare } = String.prototype;
  String.prototype.localeCompare = function (this: string, ...args: Parameters<typeof localeCompare>) {
    counts.localeCompares++;
    return localeCompare.apply(this, args);
  };
  return {
    counts,
    units: () =>
      counts.parsedChars * WORK_WEIGHTS.parsedChar +
      counts.parses * WORK_WEIGHTS.parse +
      counts.queryParamsScanned * WORK_WEIGHTS.queryParamScanned +
      counts.headersIterated * WORK_WEIGHTS.headerIterated +
      counts.timeZoneFormats * WORK_WEIGHTS.timeZoneFormat +
      counts.numberFormats * WORK_WEIGHTS.numberFormat +
      counts.localeCompares * WORK_WEIGHTS.localeCompare,
    reset: () => Object.assign(counts, zero()),
    restore() {
      for (const [i, family] of families.entries()) family.parser = parsers[i]!;
      Object.assign(URLSearchParams.prototype, { getAll, has });
      Headers.prototype[Symbol.iterator] = iterate;
      Intl.DateTimeFormat = DateTimeFormat;
      Intl.NumberFormat = NumberFormat;
      String.prototype.localeCompare = localeCompare;
    },
  };
}

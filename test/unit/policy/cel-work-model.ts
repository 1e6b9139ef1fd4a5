/**
 * The work model the CEL budget tests hold the meter to: the real work of an evaluation, counted where it
 * happens (inside ipaddr.js, URLSearchParams, Headers and Intl) rather than timed, so the tests depend on no
 * machine's speed. Each kind of work is weighed in units by a stated constant: what it costs in Node next
 * to a unit of the meter (a character scanned), from `npm run bench:cel-cost` and docs/security.md. The meter
 * must charge at least what the model counts; the bench checks that a unit really costs ≲ 50 ns.
 */

import ipaddr from "ipaddr.js";

/** Units each kind of work is worth, by the name it is counted under. */
const WORK_WEIGHTS = {
  /** Characters handed to an ipaddr.js parser. */
  parsedChars: 1,
  /** ipaddr.js parses, whatever their length: 3–16 µs each in Node, ~100 units at ≤ 50 ns a unit. */
  parses: 100,
  /** Query parameters getAll() or has() goes past (a string compare each). */
  queryParamsScanned: 2,
  /** Headers an iteration of Headers goes past (it sorts and copies them all). */
  headersIterated: 8,
  /** Intl.DateTimeFormats built (~110 µs each in Node): conversions to an IANA time zone. */
  timeZoneFormats: 2000,
  /** Intl.NumberFormats built (40–200 µs each in Node): `%f` of format(). */
  numberFormats: 2000,
  /** localeCompare calls (~0.5 µs each in Node): format() sorting a map's entries. */
  localeCompares: 10,
} as const;

type WorkCounts = { -readonly [K in keyof typeof WORK_WEIGHTS]: number };
const WORK_KINDS = Object.keys(WORK_WEIGHTS) as Array<keyof WorkCounts>;

export interface WorkModel {
  readonly counts: WorkCounts;
  /** The work counted so far, in units (WORK_WEIGHTS). */
  units(): number;
  reset(): void;
  /** Puts back what was instrumented. */
  restore(): void;
}

const zero = (): WorkCounts => Object.fromEntries(WORK_KINDS.map((kind) => [kind, 0])) as WorkCounts;

/** `Original` (an Intl constructor) counting each object it builds into `built`. */
function countingConstructor<C extends typeof Intl.DateTimeFormat | typeof Intl.NumberFormat>(Original: C, built: () => void): C {
  const counting = function (this: unknown, ...args: ConstructorParameters<C>) {
    built();
    return new (Original as new (...args: ConstructorParameters<C>) => unknown)(...args);
  } as unknown as C;
  Object.assign(counting, { supportedLocalesOf: Original.supportedLocalesOf });
  return counting;
}

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
  const { DateTimeFormat, NumberFormat } = Intl;
  Intl.DateTimeFormat = countingConstructor(DateTimeFormat, () => counts.timeZoneFormats++);
  Intl.NumberFormat = countingConstructor(NumberFormat, () => counts.numberFormats++);
  const { localeCompare } = String.prototype;
  String.prototype.localeCompare = function (this: string, ...args: Parameters<typeof localeCompare>) {
    counts.localeCompares++;
    return localeCompare.apply(this, args);
  };
  return {
    counts,
    units: () => WORK_KINDS.reduce((units, kind) => units + counts[kind] * WORK_WEIGHTS[kind], 0),
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

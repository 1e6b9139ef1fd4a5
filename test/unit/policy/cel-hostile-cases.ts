/**
 * The worst input we know of for each function of the CEL catalogue, within every static bound (a header
 * value and the URL at 16 KiB, the expression bounds of expression-cost.ts). Shared by the budget tests
 * (cel-function-cost.test.ts) and `npm run bench:cel-cost`, which measures what a unit of each costs.
 */

import type { ExchangeOptions } from "../support/exchange.ts";

/** A header value or URL at its bound: 16 KiB. */
export const FIELD = 16 * 1024;

export interface HostileCase {
  readonly name: string;
  readonly source: string;
  readonly exchange: ExchangeOptions;
}

const A = "a".repeat(FIELD);
/** Periodic text against a periodic needle that fails at its last character: the string search's worst case. */
const NEEDLE = `${"a".repeat(FIELD / 2)}b`;
const DIGITS = "9".repeat(FIELD);
/** `?a=0&a=0…`: the longest list a 16 KiB URL gives getQueryParam (4,095 elements). */
const MANY_PARAMS = `https://api.example.test/?${"a=0&".repeat(FIELD / 4 - 8)}`;
/** As many elements again, each a 1-character CIDR. */
const LOOP = `[${Array.from({ length: 64 }, (_, i) => i).join(", ")}]`;
/** A request at Workers' 128 KiB of headers, in small headers (maps and header lists at their longest). */
const MANY_HEADERS = Object.fromEntries(Array.from({ length: 4000 }, (_, i) => [`x-h${i}`, "v".repeat(16)]));
const SET_COOKIES: [string, string][] = Array.from({ length: 4000 }, (_, i) => ["set-cookie", `c${i}=${"v".repeat(16)}`]);

const headers = (values: Record<string, string>): ExchangeOptions => ({ headers: values });

export const HOSTILE_CASES: readonly HostileCase[] = [
  // Addresses and ranges (cel.ts).
  {
    name: "inCidrRanges(16 KiB address, 4095 ranges)",
    source: "inCidrRanges(req.headers['x-ip'][0], getQueryParam('a'))",
    exchange: { url: MANY_PARAMS, headers: { "x-ip": "1".repeat(FIELD) } },
  },
  {
    name: "inCidrRanges(address, 4095 ranges)",
    source: "inCidrRanges('2001:db8::1', getQueryParam('a'))",
    exchange: { url: MANY_PARAMS },
  },
  {
    name: "inCidrRanges(zoned 16 KiB address, 4095 ranges)",
    source: "inCidrRanges(req.headers['x-ip'][0], getQueryParam('a'))",
    exchange: { url: MANY_PARAMS, headers: { "x-ip": `fe80::1%${A}` } },
  },
  {
    name: "inCidrRanges(mapped address, 780 IPv4-in-IPv6 ranges)",
    source: "inCidrRanges('::ffff:255.255.255.255', getQueryParam('a'))",
    exchange: { url: `https://api.example.test/?${"a=::ffff:1.2.3.4/128&".repeat(780)}` },
  },
  {
    name: "inCidrRanges(address, 240 unparsable 66-char ranges)",
    source: "inCidrRanges('::ffff:255.255.255.255', getQueryParam('a'))",
    exchange: { url: `https://api.example.test/?${`a=::ffff:${"1".repeat(55)}/128&`.repeat(240)}` },
  },
  {
    name: "inCidrRange(16 KiB address, 16 KiB range)",
    source: "inCidrRange(req.headers['x-ip'][0], req.headers['x-cidr'][0])",
    exchange: headers({ "x-ip": `fe80::1%${A}`, "x-cidr": `fe80::%${A}/64` }),
  },
  {
    name: "inCidrRange in a loop",
    source: `${LOOP}.all(x, !inCidrRange('1.2.3.4', '10.0.0.0/8'))`,
    exchange: {},
  },
  // Searches.
  { name: "contains(periodic needle)", source: "req.headers['x-a'][0].contains(req.headers['x-b'][0])", exchange: headers({ "x-a": A, "x-b": NEEDLE }) },
  { name: "indexOf(periodic needle)", source: "req.headers['x-a'][0].indexOf(req.headers['x-b'][0]) < 0", exchange: headers({ "x-a": A, "x-b": NEEDLE }) },
  {
    name: "lastIndexOf(periodic needle)",
    source: "req.headers['x-a'][0].lastIndexOf(req.headers['x-b'][0]) < 0",
    exchange: headers({ "x-a": A, "x-b": NEEDLE }),
  },
  { name: "startsWith(16 KiB)", source: "req.headers['x-a'][0].startsWith(req.headers['x-c'][0])", exchange: headers({ "x-a": A, "x-c": `${A.slice(1)}b` }) },
  { name: "endsWith(16 KiB)", source: "req.headers['x-a'][0].endsWith(req.headers['x-c'][0])", exchange: headers({ "x-a": A, "x-c": `b${A.slice(1)}` }) },
  { name: "split(long separator)", source: "req.headers['x-a'][0].split(req.headers['x-b'][0]).size() > 0", exchange: headers({ "x-a": A, "x-b": NEEDLE }) },
  // Strings produced.
  { name: "split('')", source: "req.headers['x-a'][0].split('').size() > 0", exchange: headers({ "x-a": A }) },
  { name: "split('').join()", source: "req.headers['x-a'][0].split('').join() != ''", exchange: headers({ "x-a": A }) },
  { name: "split('').map()", source: "req.url.path.split('').map(c, c).size() > 0", exchange: { url: `https://api.example.test/${A}` } },
  { name: "split('').exists(==)", source: "req.headers['x-a'][0].split('').exists(c, c == 'z')", exchange: headers({ "x-a": A }) },
  {
    name: "strings.quote(16 KiB)",
    source: "strings.quote(req.headers['x-a'][0]) != ''",
    exchange: headers({ "x-a": `${'"'.repeat(FIELD / 2)}${"a".repeat(FIELD / 2)}` }),
  },
  { name: "format('%s', [headers])", source: "'%s'.format([req.headers]) != ''", exchange: headers(MANY_HEADERS) },
  {
    // format may not run in a comprehension's body, so the review's shape: eight calls joined, eight placeholders each.
    name: "format('%f' × 8) × 8 (an Intl.NumberFormat each)",
    source: Array.from({ length: 8 }, () => "'%f%f%f%f%f%f%f%f'.format([.1, .1, .1, .1, .1, .1, .1, .1]) != ''").join(" && "),
    exchange: {},
  },
  { name: "format('%s', [split('')])", source: "'%s'.format([req.headers['x-a'][0].split('')]) != ''", exchange: headers({ "x-a": A }) },
  { name: "format('%x', [16 KiB])", source: "'%x'.format([req.headers['x-a'][0]]) != ''", exchange: headers({ "x-a": A }) },
  { name: "lowerAscii(16 KiB)", source: "req.headers['x-a'][0].lowerAscii() != ''", exchange: headers({ "x-a": "A".repeat(FIELD) }) },
  { name: "replace(16 KiB)", source: "req.headers['x-a'][0].replace('a', '') == ''", exchange: headers({ "x-a": A }) },
  { name: "trim / substring / charAt", source: "req.headers['x-a'][0].trim().substring(1).charAt(0) == 'a'", exchange: headers({ "x-a": ` ${A} ` }) },
  { name: "+ on strings", source: "req.headers['x-a'][0] + req.headers['x-b'][0] != ''", exchange: headers({ "x-a": A, "x-b": NEEDLE }) },
  { name: "size(16 KiB)", source: "size(req.headers['x-a'][0]) > 0", exchange: headers({ "x-a": A }) },
  // Comparisons.
  { name: "== on 16 KiB strings", source: "req.headers['x-a'][0] == req.headers['x-c'][0]", exchange: headers({ "x-a": A, "x-c": `${A.slice(1)}b` }) },
  { name: "< on 16 KiB strings", source: "req.headers['x-a'][0] < req.headers['x-c'][0]", exchange: headers({ "x-a": A, "x-c": A }) },
  { name: "== on lists", source: "req.headers['x-a'][0].split('') == req.headers['x-c'][0].split('')", exchange: headers({ "x-a": A, "x-c": A }) },
  { name: "== on header maps", source: "req.headers == req.headers", exchange: headers(MANY_HEADERS) },
  { name: "in on a list", source: "req.headers['x-a'][0] in getQueryParam('a')", exchange: { url: MANY_PARAMS, headers: { "x-a": A } } },
  { name: "in on a map", source: "req.headers['x-a'][0] in req.headers", exchange: headers({ "x-a": A }) },
  // Conversions.
  { name: "int(16 KiB of digits)", source: "int(req.headers['x-d'][0]) > 0", exchange: headers({ "x-d": DIGITS }) },
  { name: "uint(16 KiB of digits)", source: "uint(req.headers['x-d'][0]) > 0u", exchange: headers({ "x-d": DIGITS }) },
  { name: "double(16 KiB of digits)", source: "double(req.headers['x-d'][0]) > 0.0", exchange: headers({ "x-d": DIGITS }) },
  { name: "string(bytes(16 KiB))", source: "string(bytes(req.headers['x-a'][0])) != ''", exchange: headers({ "x-a": A }) },
  { name: "timestamp(16 KiB)", source: "timestamp(req.headers['x-a'][0]) > timestamp(0)", exchange: headers({ "x-a": A }) },
  { name: "duration(16 KiB)", source: "duration(req.headers['x-a'][0]) > duration('0s')", exchange: headers({ "x-a": A }) },
  { name: "getHours(time zone) in a loop", source: `${LOOP}.all(x, timestamp(time.now).getHours('America/New_York') >= 0)`, exchange: {} },
  { name: "getHours(offset) in a loop", source: `${LOOP}.all(x, timestamp(time.now).getHours('+01:00') >= 0)`, exchange: {} },
  { name: "timestamp(time.now) in a loop", source: `${LOOP}.all(x, timestamp(time.now) > timestamp(0))`, exchange: {} },
  { name: "timestamp(0).getHours() in a loop", source: `${LOOP}.all(x, timestamp(0).getHours() >= 0)`, exchange: {} },
  { name: "getDayOfYear in a loop", source: `${LOOP}.all(x, timestamp(time.now).getDayOfYear() >= 0)`, exchange: {} },
  // The macros (cel.ts).
  { name: "hasQueryParam(absent) of 4095, in a loop", source: `${LOOP}.all(x, !hasQueryParam('zz'))`, exchange: { url: MANY_PARAMS } },
  { name: "getQueryParam(absent) of 4095, in a loop", source: `${LOOP}.all(x, getQueryParam('zz').size() == 0)`, exchange: { url: MANY_PARAMS } },
  { name: "getReqHeader(set-cookie) of 4000, in a loop", source: `${LOOP}.all(x, getReqHeader('set-cookie').size() >= 0)`, exchange: { headers: SET_COOKIES } },
  {
    name: "getReqHeader(set-cookie) absent of 4000, in a loop",
    source: `${LOOP}.all(x, getReqHeader('set-cookie').size() == 0)`,
    exchange: headers(MANY_HEADERS),
  },
  { name: "getReqHeader of 4000 headers, in a loop", source: `${LOOP}.all(x, getReqHeader('x-h1').size() > 0)`, exchange: headers(MANY_HEADERS) },
  { name: "a loop of cheap calls", source: `${LOOP}.all(x, x + 1 > x)`, exchange: {} },
];

/**
 * `req.cookies` (as ngrok's): the Cookie header parsed into a map of names to the cookies of that name, in
 * header order, each `{name, value}`. A hidden variable (`@req.cookies`, rewrite.ts): parsed only when an
 * expression reads it, at most MAX_COOKIES cookies, charged to the request's CEL budget.
 */

import { list, map, record, STRING } from "../cel-types.ts";
import { ELEMENT_UNITS } from "../cel-meter.ts";
import type { Exchange } from "../exchange.ts";
import type { VariableFamily } from "./family.ts";

/** Cookies `req.cookies` holds; later ones are left out (`req.headers['cookie']` still has the header). */
export const MAX_COOKIES = 128;

export const COOKIES = map(STRING, list(record("req.cookies[name][i]", { name: STRING, value: STRING })));

function cookies(exchange: Exchange): Map<string, Map<string, string>[]> {
  const parsed = new Map<string, Map<string, string>[]>();
  const header = exchange.request.headers.get("cookie") ?? "";
  let count = 0;
  let units = 0;
  // `name=value; name=value`, scanned pair by pair (never split whole: the header may be long), without a
  // pattern: values may hold `=`.
  let from = 0;
  while (from < header.length && count < MAX_COOKIES) {
    const end = header.indexOf(";", from);
    const pair = header.slice(from, end < 0 ? header.length : end);
    from = end < 0 ? header.length : end + 1;
    const equals = pair.indexOf("=");
    const name = equals > 0 ? pair.slice(0, equals).trim() : "";
    if (name === "") continue;
    let value = pair.slice(equals + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    count++;
    units += ELEMENT_UNITS * 2 + name.length + value.length;
    const cookie = new Map([
      ["name", name],
      ["value", value],
    ]);
    const same = parsed.get(name);
    if (same) same.push(cookie);
    else parsed.set(name, [cookie]);
  }
  exchange.budget.chargeCel(units + from);
  return parsed;
}

export const cookieVariables: VariableFamily = { types: { "@req.cookies": COOKIES }, readers: { "@req.cookies": cookies } };

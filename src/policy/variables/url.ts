/**
 * `req.url` as ngrok defines it: the normalized full URL, a string; its parts (`req.url.path`, `.query`,
 * `.query_params`, …) are the hidden variables `@req.url` and `@req.url.query_params` (rewrite.ts), read
 * only when an expression reads them.
 */

import { INT, record, STRING, STRING_LIST_MAP } from "../cel-types.ts";
import { ELEMENT_UNITS } from "../cel-meter.ts";
import type { EvaluationBudget } from "../evaluation-budget.ts";
import type { Exchange } from "../exchange.ts";
import type { VariableFamily } from "./family.ts";

/** Query parameters `req.url.query_params` holds; the rest of a longer query is left out (getQueryParam still sees it). */
export const MAX_QUERY_PARAMS = 256;

export const URL_FIELDS = record("req.url", {
  authority: STRING,
  host: STRING,
  path: STRING,
  port: INT,
  query: STRING,
  query_params: STRING_LIST_MAP,
  raw: STRING,
  raw_path: STRING,
  scheme: STRING,
  uri: STRING,
  user_password: STRING,
});

function urlFields(exchange: Exchange): Map<string, unknown> {
  const url = exchange.request.url;
  const userPassword = url.username || url.password ? `${url.username}${url.password ? `:${url.password}` : ""}` : "";
  const fields = new Map<string, unknown>([
    ["authority", userPassword ? `${userPassword}@${url.host}` : url.host],
    ["host", url.hostname],
    ["path", url.pathname],
    ["query", url.search.replace(/^\?/, "")],
    // Tollgate has always given the path and query here; ngrok's `raw` is the un-normalized full URL, which
    // the Workers runtime never shows (it hands over the URL already parsed).
    ["raw", url.pathname + url.search],
    ["raw_path", url.pathname],
    ["scheme", url.protocol.replace(/:$/, "")],
    ["uri", url.pathname + url.search],
    ["user_password", userPassword],
  ]);
  // As ngrok: absent unless the URL names a port (has(req.url.port) tells).
  if (url.port) fields.set("port", BigInt(url.port));
  return fields;
}

/** Names to every value, in order, for the first MAX_QUERY_PARAMS parameters; charged to the request's CEL budget. */
export function queryParams(url: URL, budget: EvaluationBudget): Map<string, string[]> {
  const params = new Map<string, string[]>();
  let count = 0;
  let units = 0;
  for (const [name, value] of url.searchParams) {
    if (++count > MAX_QUERY_PARAMS) break;
    const values = params.get(name);
    if (values) values.push(value);
    else params.set(name, [value]);
    units += ELEMENT_UNITS + name.length + value.length;
  }
  budget.chargeCel(units);
  return params;
}

export const urlVariables: VariableFamily = {
  types: { "@req.url": URL_FIELDS, "@req.url.query_params": STRING_LIST_MAP },
  readers: {
    "@req.url": urlFields,
    "@req.url.query_params": (exchange) => queryParams(exchange.request.url, exchange.budget),
  },
};

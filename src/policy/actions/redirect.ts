/**
 * `redirect` (as ngrok's): when `from` (absent: the whole URL) matches and replacing it by `to` changes the
 * URL, answers `status_code` (default 302) with `Location` set to the new URL and the configured headers;
 * otherwise does nothing. The Location is always absolute, http or https. Only a `to` that begins with a
 * scheme or `//` as written may send the client to another host; any other stays on the request's host, and
 * when what it became leaves it (`//evil.example` from `${req.url.path}` or `$1`), nothing is answered and
 * `actions.svc.redirect.error` says why.
 */

import { z } from "zod";
import { defineAction, isHeaderName, type ActionContext } from "./action.ts";
import { headerSafe, headerValueSchema, MAX_INTERPOLATED_HEADER_CHARS } from "./header-text.ts";
import { compileFields, FieldRun } from "./interpolated-fields.ts";
import {
  compileReplacement,
  EMPTY_AUTHORITY,
  fromSchema,
  resolveReplaced,
  toSchema,
  type UrlReplacementVars,
  urlReplacementResults,
} from "./url-replacement.ts";

/** Headers of one redirect (ngrok's maximum). */
export const MAX_REDIRECT_HEADERS = 10;

export const redirectConfig = z.strictObject({
  from: fromSchema,
  to: toSchema,
  status_code: z
    .number({ error: "must be an integer" })
    .int("must be an integer")
    .min(300, "must be a 3xx status")
    .max(399, "must be a 3xx status")
    .default(302)
    .describe("A 3xx status; default 302."),
  headers: z
    .record(
      z
        .string()
        .refine(isHeaderName, "is not a valid header name")
        .refine((name) => name.toLowerCase() !== "location", "cannot be set: the Location is the URL `to` makes"),
      headerValueSchema,
    )
    .refine((headers) => Object.keys(headers).length <= MAX_REDIRECT_HEADERS, `exceeds the limit of ${MAX_REDIRECT_HEADERS} headers`)
    .optional()
    .describe("Headers added to the redirect response; values may interpolate ${expression}."),
});

type Config = z.output<typeof redirectConfig>;

export const REDIRECT_OFF_SITE_ERROR = "ERR_REDIRECT_OFF_SITE";
export const REDIRECT_SCHEME_ERROR = "ERR_REDIRECT_SCHEME";

/**
 * A `to` that names where it goes as written (`https://…`, `//host/…`): the only kind that may leave the host.
 * `https:///…` names a scheme but no host, so it stays on the request's (docs/policies.md).
 */
const namesItsHost = (to: string) => /^([A-Za-z][A-Za-z0-9+.-]*:|\/\/)/.test(to) && !EMPTY_AUTHORITY.test(to);

const compiledParts = (config: Config, context: ActionContext) => {
  const replacement = compileReplacement(config.from, config.to, context);
  if (!replacement.ok) return replacement;
  const headers = compileFields(
    Object.entries(config.headers ?? {}).map(([name, value]) => [["headers", name], value] as const),
    context,
  );
  if (!headers.ok) return headers;
  return { ok: true as const, replacement: replacement.replacement, headers: headers.fields };
};

declare module "./results.ts" {
  interface ActionVars {
    redirect: UrlReplacementVars;
  }
}

export const redirectAction = defineAction({
  type: "redirect",
  config: redirectConfig,
  configOptional: false,
  results: urlReplacementResults("redirect"),
  compile(config, context) {
    if (context.phase !== "inbound") return { path: [], message: "runs only on requests (inbound, ngrok's on_http_request), as ngrok's does" };
    const compiled = compiledParts(config, context);
    if (!compiled.ok) return { path: compiled.path, message: compiled.message };
    const { replacement, headers } = compiled;
    const staysOnHost = !namesItsHost(config.to);
    return {
      type: "redirect",
      run(exchange, services) {
        const vars = exchange.vars.redirect;
        const url = exchange.request.url;
        const fail = (code: string, message: string) => {
          vars.error = { code, message };
          return undefined;
        };
        const outcome = replacement.apply(exchange, services, url.href);
        if (!outcome.ok) return fail(outcome.code, outcome.message);
        vars.matches = [...outcome.matches];
        vars.error = { code: "", message: "" };
        if (!outcome.replaced) return undefined;
        const location = resolveReplaced(outcome.text, url);
        if (!location || (location.protocol !== "https:" && location.protocol !== "http:")) {
          return fail(REDIRECT_SCHEME_ERROR, "The redirect's URL is not an http or https URL.");
        }
        if (staysOnHost && location.host !== url.host) {
          return fail(REDIRECT_OFF_SITE_ERROR, "The redirect's `to` names no scheme or host as written, but the URL it became names another host.");
        }
        if (location.href === url.href) return undefined;
        vars.url = location.href;
        const response = new Response(null, { status: config.status_code, headers: { location: location.href } });
        const run = new FieldRun(exchange, services);
        for (const field of headers) response.headers.set(String(field.path[1]), headerSafe(run.render(field, MAX_INTERPOLATED_HEADER_CHARS)));
        return response;
      },
    };
  },
});

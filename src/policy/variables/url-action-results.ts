/**
 * `actions.svc.url_rewrite.*`, `actions.svc.redirect.*` and `actions.svc.basic_auth.*` (and `actions.ngrok.…`):
 * what the last url-rewrite, redirect and basic-auth found, as ngrok names it.
 */

import { BOOL, record, STRING, STRING_LIST, type Type } from "../cel-types.ts";
import type { BasicAuthVars, UrlReplacementVars } from "../exchange.ts";

const errorType = (of: string) => record(`${of}.error`, { code: STRING, message: STRING });

/** The types of `<at>.url_rewrite`, `<at>.redirect` and `<at>.basic_auth`, `at` being `actions.svc` or `actions.ngrok`. */
export function urlActionTypes(at: string): Record<"url_rewrite" | "redirect" | "basic_auth", Type> {
  const replacement = (name: string) => record(`${at}.${name}`, { matches: STRING_LIST, url: STRING, error: errorType(`${at}.${name}`) });
  return {
    url_rewrite: replacement("url_rewrite"),
    redirect: replacement("redirect"),
    basic_auth: record(`${at}.basic_auth`, {
      credentials: record(`${at}.basic_auth.credentials`, { presented: BOOL, username: STRING, authorized: BOOL }),
    }),
  };
}

function replacementResults({ matches, url, error }: UrlReplacementVars): Map<string, unknown> {
  return new Map<string, unknown>([
    ["matches", matches],
    ["url", url],
    [
      "error",
      new Map([
        ["code", error.code],
        ["message", error.message],
      ]),
    ],
  ]);
}

/** The values, from the exchange's `vars`, read by action-results.ts with the other actions' results. */
export function urlActionResults(vars: { url_rewrite: UrlReplacementVars; redirect: UrlReplacementVars; basic_auth: BasicAuthVars }): Array<[string, unknown]> {
  const { presented, username, authorized } = vars.basic_auth.credentials;
  return [
    ["url_rewrite", replacementResults(vars.url_rewrite)],
    ["redirect", replacementResults(vars.redirect)],
    [
      "basic_auth",
      new Map([
        [
          "credentials",
          new Map<string, unknown>([
            ["presented", presented],
            ["username", username],
            ["authorized", authorized],
          ]),
        ],
      ]),
    ],
  ];
}

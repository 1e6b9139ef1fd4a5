/**
 * `actions.svc.jwt_validation.*` (and `actions.ngrok.…`): what the last jwt-validation verified. `tokens` and
 * `error` as ngrok names them; `claims` is Tollgate's: the first token's claims, for bucket keys and tiers.
 */

import { BOOL, DYN, list, map, record, STRING, type Type } from "../cel-types.ts";
import type { JwtValidationVars } from "../exchange.ts";

const JSON_MAP = map(STRING, DYN);

/** The type of `<at>.jwt_validation`, `at` being `actions.svc` or `actions.ngrok`. */
export function jwtValidationType(at: string): Type {
  const of = `${at}.jwt_validation`;
  return record(of, {
    tokens: list(
      record(`${of}.tokens[]`, { header: JSON_MAP, location: STRING, location_property: STRING, payload: JSON_MAP, signature: STRING, verified: BOOL }),
    ),
    claims: JSON_MAP,
    error: record(`${of}.error`, { code: STRING, message: STRING }),
  });
}

/** `results`: the exchange's `vars.jwt_validation`, read by action-results.ts with the other actions' results. */
export function jwtValidationResults({ tokens, claims, error }: JwtValidationVars): Map<string, unknown> {
  return new Map<string, unknown>([
    ["tokens", tokens],
    ["claims", claims],
    [
      "error",
      new Map([
        ["code", error.code],
        ["message", error.message],
      ]),
    ],
  ]);
}

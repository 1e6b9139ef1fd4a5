/** `actions.svc.verify_webhook.*` (and `actions.ngrok.…`): what the last verify-webhook found, as ngrok names it. */

import { BOOL, record, STRING, type Type } from "../cel-types.ts";
import type { VerifyWebhookVars } from "../exchange.ts";

/** The type of `<at>.verify_webhook`, `at` being `actions.svc` or `actions.ngrok`. */
export function verifyWebhookType(at: string): Type {
  const of = `${at}.verify_webhook`;
  return record(of, { verified: BOOL, error: record(`${of}.error`, { code: STRING, message: STRING }) });
}

/** `results`: the exchange's `vars.verify_webhook`, read by action-results.ts with the other actions' results. */
export function verifyWebhookResults({ verified, error }: VerifyWebhookVars): Map<string, unknown> {
  return new Map<string, unknown>([
    ["verified", verified],
    [
      "error",
      new Map([
        ["code", error.code],
        ["message", error.message],
      ]),
    ],
  ]);
}

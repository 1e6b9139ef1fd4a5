/** `actions.svc.verify_webhook.*` (and `actions.ngrok.…`): what the last verify-webhook found, as ngrok names it. */

import { BOOL, record, STRING, type Type } from "../cel-types.ts";
import type { Exchange } from "../exchange.ts";

/** The type of `<at>.verify_webhook`, `at` being `actions.svc` or `actions.ngrok`. */
export function verifyWebhookType(at: string): Type {
  const of = `${at}.verify_webhook`;
  return record(of, { verified: BOOL, error: record(`${of}.error`, { code: STRING, message: STRING }) });
}

export function verifyWebhookResults(exchange: Exchange): Map<string, unknown> {
  const { verified, error } = exchange.vars.verify_webhook;
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

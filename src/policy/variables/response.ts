/** `res.*`: the upstream's status and headers, readable in outbound expressions only. */

import { INT, record, refused, STRING_LIST_MAP } from "../cel-types.ts";
import type { VariableFamily } from "./family.ts";

export const RES = record("res", {
  status_code: INT,
  headers: STRING_LIST_MAP,
  // Only settle_cost runs after the body arrived (response-body.ts gives it the field).
  body: refused("res.body is readable only in a rate-limit's settle_cost"),
});

/** Read in catalog.ts, beside `req`: both take a header map (header-map.ts). */
export const responseVariables: VariableFamily = { types: { res: RES }, readers: {}, outboundOnly: true };

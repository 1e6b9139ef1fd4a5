/**
 * Interpolated header values: what `${…}` wrote is cut to MAX_INTERPOLATED_HEADER_CHARS and stripped of
 * what could end a header line or that a header cannot carry (NUL, CR, LF, characters beyond U+00FF), so no
 * value a client controls can add a header or make the request fail. Removed rather than the header dropped:
 * the header the policy asked for is always sent, and its value is never more than what was interpolated.
 */

import { z } from "zod";
import { goDouble } from "../cel-text.ts";
import { HEADER_VALUE_MESSAGE, isHeaderValue } from "./action.ts";

/**
 * A configured header value: text, or a YAML number or boolean written as text (ngrok's examples write
 * `is-ngrok: 1`), which must be a valid header value apart from its `${…}`.
 */
export const headerValueSchema = z
  .union([z.string(), z.number(), z.boolean()], { error: "must be a string, number or boolean" })
  .transform((value) => (typeof value === "number" && !Number.isInteger(value) ? goDouble(value) : String(value)))
  .refine(isHeaderValue, HEADER_VALUE_MESSAGE);

/** Characters of one header value after interpolation (the text is cut there). */
export const MAX_INTERPOLATED_HEADER_CHARS = 8 * 1024;

const UNFIT = /[\0\r\n\u0100-\uffff]/g;

/** `text` without the characters a header value cannot carry. */
export function headerSafe(text: string): string {
  return text.replace(UNFIT, "");
}

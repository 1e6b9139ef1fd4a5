/**
 * The version header every management call must carry: `Service-Version: 2`, or its alias
 * `Ngrok-Version: 2`, which the reference API's clients send (so they work unmodified).
 */

import type { MiddlewareHandler } from "hono";
import { ErrorCode, ServiceError } from "../errors.ts";
import type { ManagementEnv } from "./context.ts";

export const VERSION_HEADER = "Service-Version";
/** Accepted in place of (or beside) Service-Version, with the same rules. */
export const VERSION_HEADER_ALIAS = "Ngrok-Version";
export const SUPPORTED_VERSION = "2";
/** Longest header value an error message repeats. */
const SHOWN_VALUE_LENGTH = 32;

/**
 * Neither header → 400 ERR_SVC_218; any header of the two present with a value but `2` → 400 ERR_SVC_217
 * naming that header (when both are sent, both must say `2`).
 */
export function serviceVersion(): MiddlewareHandler<ManagementEnv> {
  return async function serviceVersion(c, next) {
    const sent = [VERSION_HEADER, VERSION_HEADER_ALIAS].flatMap((header) => {
      const value = c.req.header(header);
      return value === undefined || value.trim() === "" ? [] : [{ header, value }];
    });
    if (sent.length === 0) {
      throw new ServiceError(
        400,
        ErrorCode.missingVersion,
        `The ${VERSION_HEADER} header is required; send '${VERSION_HEADER}: ${SUPPORTED_VERSION}' (or its alias '${VERSION_HEADER_ALIAS}: ${SUPPORTED_VERSION}').`,
        { details: { header: VERSION_HEADER } },
      );
    }
    for (const { header, value } of sent) {
      if (value.trim() === SUPPORTED_VERSION) continue;
      const shown = value.length > SHOWN_VALUE_LENGTH ? `${value.slice(0, SHOWN_VALUE_LENGTH)}…` : value;
      throw new ServiceError(400, ErrorCode.unsupportedVersion, `${header} '${shown}' is not supported; the supported version is ${SUPPORTED_VERSION}.`, {
        details: {
          header,
          supported_versions: [SUPPORTED_VERSION],
        },
      });
    }
    await next();
  };
}

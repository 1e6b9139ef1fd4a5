/** The `Service-Version` request header every management call must carry. */

import type { MiddlewareHandler } from "hono";
import { ErrorCode, ServiceError } from "../errors.ts";
import type { ManagementEnv } from "./context.ts";

export const VERSION_HEADER = "Service-Version";
export const SUPPORTED_VERSION = "2";

/** Missing header → 400 ERR_SVC_218; any value but `2` → 400 ERR_SVC_217. */
export function serviceVersion(): MiddlewareHandler<ManagementEnv> {
  return async function serviceVersion(c, next) {
    const value = c.req.header(VERSION_HEADER);
    if (value === undefined || value.trim() === "") {
      throw new ServiceError(
        400,
        ErrorCode.missingVersion,
        `The ${VERSION_HEADER} header is required; send '${VERSION_HEADER}: ${SUPPORTED_VERSION}'.`,
        { header: VERSION_HEADER },
      );
    }
    if (value.trim() !== SUPPORTED_VERSION) {
      const shown = value.length > 32 ? `${value.slice(0, 32)}…` : value;
      throw new ServiceError(
        400,
        ErrorCode.unsupportedVersion,
        `${VERSION_HEADER} '${shown}' is not supported; the supported version is ${SUPPORTED_VERSION}.`,
        { header: VERSION_HEADER, supported_versions: [SUPPORTED_VERSION] },
      );
    }
    await next();
  };
}

/** The one error handler of the API, and the 404/405 answers for paths and methods it does not serve. */

import type { Context, ErrorHandler, MiddlewareHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { errorAnswer } from "../error-answer.ts";
import { ErrorCode, OPERATION_ID_HEADER, ServiceError, newOperationId } from "../errors.ts";
import type { ManagementEnv } from "./context.ts";

/** Names the request: sets `operationId` and the `x-operation-id` header of every response. */
export function operationId(): MiddlewareHandler<ManagementEnv> {
  return async function operationId(c, next) {
    const id = newOperationId();
    c.set("operationId", id);
    await next();
    c.res.headers.set(OPERATION_ID_HEADER, id);
  };
}

/**
 * What a browser that lands on the API (the gateway root, in the default config) shows under any error
 * that brings no advice of its own.
 */
const API_ADVICE = {
  title: "This is Tollgate's management API",
  steps: [
    "It answers programs, not browsers: send Authorization: Bearer <API key> and Service-Version: 2 with every request.",
    "docs/management-api.md lists its resources; GET /openapi.json describes them.",
  ],
};

/** The error's envelope, or its HTML page for a browser (see error-answer.ts). */
function answer(error: ServiceError, c: Context<ManagementEnv>, id: string): Response {
  return errorAnswer(error, c.req.raw, id, API_ADVICE);
}

/** ServiceErrors render their envelope; anything else is a bug, logged and answered 500 without detail. */
export const handleError: ErrorHandler<ManagementEnv> = (error, c) => {
  const id = c.get("operationId") ?? newOperationId();
  if (error instanceof ServiceError) return answer(error, c, id);
  if (error instanceof HTTPException && error.status < 500) {
    return answer(new ServiceError(error.status, ErrorCode.invalidValue, error.message || "The request is not valid."), c, id);
  }
  console.error(`Tollgate management API: ${c.req.method} ${new URL(c.req.url).pathname} failed (${id}):`, error);
  return answer(new ServiceError(500, ErrorCode.internal, "An internal error occurred; the operation id names it in the server's logs."), c, id);
};

export interface ServedOperation {
  readonly method: string;
  readonly pattern: RegExp;
}

/** An unknown path → 404 ERR_SVC_204; a known path with another method → 405 ERR_SVC_205 with `allow`. */
export function notFoundOrMethodNotAllowed(operations: () => readonly ServedOperation[]): NotFoundHandler<ManagementEnv> {
  return (c) => {
    const path = new URL(c.req.url).pathname;
    const allowed = [
      ...new Set(
        operations()
          .filter((op) => op.pattern.test(path))
          .map((op) => op.method),
      ),
    ];
    if (allowed.length === 0) {
      return answer(
        new ServiceError(404, ErrorCode.notFound, `The management API has no resource at '${path}'.`, { details: { path } }),
        c,
        c.get("operationId"),
      );
    }
    if (allowed.includes("GET")) allowed.push("HEAD");
    return answer(
      new ServiceError(405, ErrorCode.methodNotAllowed, `Method ${c.req.method} is not allowed on '${path}'; allowed: ${allowed.join(", ")}.`, {
        details: {
          path,
          method: c.req.method,
          allowed,
        },
        headers: { allow: allowed.join(", ") },
      }),
      c,
      c.get("operationId"),
    );
  };
}

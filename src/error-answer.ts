/**
 * Answers an error the gateway makes itself as the client prefers: an HTML page for a browser, the JSON
 * envelope for everyone else (as ngrok serves its ERR_NGROK_3200 page to browsers and JSON to its API's clients).
 */

import { Context } from "hono";
import { accepts } from "hono/accepts";
import { newOperationId, type ErrorAdvice, type ServiceError } from "./errors.ts";
import { errorPageResponse } from "./error-page.ts";

/**
 * Characters of an Accept header that are read; a longer one is treated as absent (JSON). A browser sends
 * fewer than 200; the bound keeps a hostile header from costing a parse and a sort of thousands of entries.
 */
export const MAX_ACCEPT_CHARS = 1024;

const HTML = "text/html";
const JSON_TYPE = "application/json";

/**
 * True when the request's Accept ranks text/html above JSON (q-values and specificity, by Hono's `accepts`):
 * a browser's navigation does; `application/json`, `*\/*` or no Accept (curl, fetch(), API clients) do not.
 */
export function prefersHtml(request: Request): boolean {
  const accept = request.headers.get("accept");
  if (accept === null || accept.length > MAX_ACCEPT_CHARS) return false;
  return accepts(new Context(request), { header: "Accept", supports: [JSON_TYPE, HTML], default: JSON_TYPE }) === HTML;
}

/**
 * The error's HTML page when the request prefers HTML, else its JSON envelope (unchanged). `fallback`: the
 * page's advice when the error has none of its own.
 */
export function errorAnswer(error: ServiceError, request: Request, operationId: string = newOperationId(), fallback?: ErrorAdvice): Response {
  return prefersHtml(request) ? errorPageResponse(error, operationId, error.advice ?? fallback) : error.toResponse(operationId);
}

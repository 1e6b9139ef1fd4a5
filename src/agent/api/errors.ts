/** Agent API errors: `{error_code, status_code, msg, details: {err}}`, one class that renders itself. */

import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/** Numbers of the agent API's errors (documented in docs/agent.md). */
export const AgentErrorCode = {
  notFound: 100,
  hostNotAllowed: 101,
  invalidTunnelDefinition: 102,
  edgeRefused: 103,
  duplicateTunnel: 104,
  unsupportedMediaType: 105,
  methodNotAllowed: 106,
  internal: 107,
  badRequest: 108,
  sessionNotReady: 109,
} as const;

export class AgentApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: number,
    message: string,
    readonly detail: string = message,
  ) {
    super(message);
    this.name = "AgentApiError";
  }

  body(): { error_code: number; status_code: number; msg: string; details: { err: string } } {
    return { error_code: this.code, status_code: this.status, msg: this.message, details: { err: this.detail } };
  }

  render(c: Context): Response {
    return c.json(this.body(), this.status);
  }
}

export const notFound = (what: string) => new AgentApiError(404, AgentErrorCode.notFound, `${what} not found`);

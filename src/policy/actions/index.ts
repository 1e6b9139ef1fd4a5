/** The action types the gateway runs: registering one here is all that adding an action takes besides its file. */

import { basicAuthAction } from "./basic-auth.ts";
import { circuitBreakerAction } from "./circuit-breaker.ts";
import { customResponseAction } from "./custom-response.ts";
import { denyAction } from "./deny.ts";
import { forwardInternalAction } from "./forward-internal.ts";
import { addHeadersAction, removeHeadersAction } from "./headers.ts";
import { jwtValidationAction } from "./jwt-validation.ts";
import { logAction } from "./log.ts";
import { rateLimitAction } from "./rate-limit.ts";
import { redirectAction } from "./redirect.ts";
import { ActionRegistry } from "./registry.ts";
import type { ActionDefinition } from "./action.ts";
import type { ActionVars } from "./results.ts";
import { restrictIpsAction } from "./restrict-ips.ts";
import { setVarsAction } from "./set-vars.ts";
import { urlRewriteAction } from "./url-rewrite.ts";
import { verifyWebhookAction } from "./verify-webhook.ts";

export type { ActionDefinition, CompiledAction } from "./action.ts";
export { ActionRegistry } from "./registry.ts";
export type { ActionVars } from "./results.ts";

/** In the order the JSON Schema of policy files lists them. */
export const actionRegistry = new ActionRegistry(
  [
    rateLimitAction,
    denyAction,
    customResponseAction,
    addHeadersAction,
    removeHeadersAction,
    logAction,
    restrictIpsAction,
    forwardInternalAction,
    setVarsAction,
    verifyWebhookAction,
    jwtValidationAction,
    urlRewriteAction,
    redirectAction,
    basicAuthAction,
    circuitBreakerAction,
  ].map((action) => action as unknown as ActionDefinition),
);

/** The result variables of every registered action before any ran: a fresh set for each request. */
export function initialVars(): ActionVars {
  return actionRegistry.initialVars();
}

export { customResponseAction } from "./custom-response.ts";
export { denyAction } from "./deny.ts";
export { forwardInternalAction } from "./forward-internal.ts";
export { addHeadersAction, removeHeadersAction } from "./headers.ts";
export { logAction } from "./log.ts";
export { rateLimitAction } from "./rate-limit.ts";
export { restrictIpsAction } from "./restrict-ips.ts";
export { setVarsAction } from "./set-vars.ts";
export type { ActionDefinition, CompiledAction } from "./action.ts";

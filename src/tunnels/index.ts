/** Tunnels: the Durable Objects the Worker exports and the dispatch it calls. */

export { routeTunnelTraffic } from "./dispatch.ts";
export { HostCache } from "./host-cache.ts";
export { CompiledPolicyCache } from "./policy-cache.ts";
export type { TunnelServices } from "./services.ts";
export { TunnelHost } from "./host-object.ts";
export { TunnelRegistry } from "./registry-object.ts";
export { TunnelSession } from "./session-object.ts";

/**
 * DNS-rebinding defence for the unauthenticated agent API: only requests whose Host names this machine
 * (localhost, 127.0.0.1, ::1), the API's own IP address, or an entry of `web_allow_hosts` are served.
 */

import type { MiddlewareHandler } from "hono";
import { AgentApiError, AgentErrorCode } from "./errors.ts";

const LOOPBACK = ["localhost", "127.0.0.1", "::1"];

/** The host name of a Host header value, lower-cased, without port and brackets. */
export function hostnameOf(host: string): string {
  const value = host.trim().toLowerCase();
  if (value.startsWith("[")) return value.slice(1, value.indexOf("]") > 0 ? value.indexOf("]") : undefined);
  const colon = value.lastIndexOf(":");
  return colon > 0 && value.indexOf(":") === colon ? value.slice(0, colon) : value;
}

export interface HostCheckOptions {
  /** Host names allowed besides loopback (`web_allow_hosts`). */
  readonly allowHosts?: readonly string[];
  /** The host the API listens on; allowed when it is an IP address (it cannot be rebound). */
  readonly listenHost?: string;
}

export function hostCheck({ allowHosts = [], listenHost }: HostCheckOptions = {}): MiddlewareHandler {
  const allowed = new Set([...LOOPBACK, ...allowHosts.map(hostnameOf)]);
  if (listenHost && /^[\d.]+$|:/.test(listenHost))
    allowed.add(hostnameOf(listenHost.includes(":") && !listenHost.startsWith("[") ? `[${listenHost}]` : listenHost));
  return async function hostCheck(c, next) {
    const host = c.req.header("host");
    if (!host || !allowed.has(hostnameOf(host))) {
      return new AgentApiError(
        403,
        AgentErrorCode.hostNotAllowed,
        `Host ${JSON.stringify(host ?? "")} is not allowed: the agent API answers only requests to localhost, 127.0.0.1, ::1 or a host in web_allow_hosts (a defence against DNS rebinding).`,
      ).render(c);
    }
    await next();
  };
}

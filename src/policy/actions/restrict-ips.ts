/**
 * `restrict-ips` (as ngrok's): the client address (`conn.client_ip`, never X-Forwarded-For) must lie in one of
 * the `allow` CIDRs, when any are given, and in none of the `deny` CIDRs; otherwise 403, or with
 * `enforce: false` only `actions.svc.restrict_ips.denied`.
 */

import ipaddr from "ipaddr.js";
import { z } from "zod";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { defineAction } from "./action.ts";

/** CIDRs in each of `allow` and `deny`: a request checks its address against each, one by one. */
export const MAX_CIDRS = 256;

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

function parseRange(cidr: string): Range | undefined {
  try {
    return ipaddr.parseCIDR(cidr.trim());
  } catch {
    return undefined;
  }
}

const cidrList = z
  .array(
    z.string({ error: "must be a string" }).refine((cidr) => parseRange(cidr) !== undefined, {
      error: (issue) => `must be a CIDR such as 203.0.113.0/24 or 2001:db8::/32 (got '${String(issue.input)}')`,
    }),
    { error: "must be a list of CIDRs" },
  )
  .min(1, "must have at least 1 CIDR")
  .max(MAX_CIDRS, `exceeds the limit of ${MAX_CIDRS} CIDRs`)
  .optional();

export const restrictIpsConfig = z
  .strictObject({
    enforce: z.boolean({ error: "must be a boolean" }).default(true).describe("false: set actions.svc.restrict_ips.denied but let the request through."),
    allow: cidrList.describe("Client addresses allowed (any address when absent)."),
    deny: cidrList.describe("Client addresses denied, even when allowed."),
  })
  .refine((config) => config.allow !== undefined || config.deny !== undefined, { message: "must have allow or deny" });

/** Whether `address` lies in one of `ranges`; an IPv4-mapped IPv6 address is checked as IPv4 against IPv4 ranges. */
function inRanges(address: ipaddr.IPv4 | ipaddr.IPv6 | undefined, ranges: readonly Range[]): boolean {
  if (!address) return false;
  const mapped = address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : undefined;
  for (const [range, bits] of ranges) {
    if (address.kind() === range.kind() && address.match(range, bits)) return true;
    if (mapped && range.kind() === "ipv4" && mapped.match(range, bits)) return true;
  }
  return false;
}

function parseAddress(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  try {
    return ipaddr.parse(ip);
  } catch {
    return undefined;
  }
}

export const restrictIpsAction = defineAction({
  type: "restrict-ips",
  config: restrictIpsConfig,
  configOptional: false,
  compile(config, context) {
    const allow = config.allow?.map((cidr) => parseRange(cidr)!);
    const deny = (config.deny ?? []).map((cidr) => parseRange(cidr)!);
    return {
      type: "restrict-ips",
      run(exchange) {
        const address = parseAddress(exchange.clientIp);
        // An address that does not parse is in no range: refused by an allow-list, not by a deny-list.
        const denied = (allow !== undefined && !inRanges(address, allow)) || inRanges(address, deny);
        exchange.vars.restrict_ips.denied = denied;
        if (!denied || !config.enforce) return undefined;
        return new ServiceError(403, ErrorCode.denied, "The client address is not allowed by the traffic policy.", { action: context.position }).toResponse();
      },
    };
  },
});

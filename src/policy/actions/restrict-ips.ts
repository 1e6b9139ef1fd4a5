/**
 * `restrict-ips` (as ngrok's): the client address (`conn.client_ip`, never X-Forwarded-For) must lie in one of
 * the `allow` CIDRs, when any are given, and in none of the `deny` CIDRs; otherwise 403, or with
 * `enforce: false` only the result variables `actions.svc.restrict_ips.*` (denied, and ngrok's action,
 * matched_cidr, error).
 */

import ipaddr from "ipaddr.js";
import { z } from "zod";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { BOOL, STRING } from "../cel-types.ts";
import { defineAction } from "./action.ts";
import { declareResults, ERROR_SHAPE, noError, type ResultError } from "./results.ts";

/** CIDRs in each of `allow` and `deny`: a request checks its address against each, one by one. */
export const MAX_CIDRS = 256;

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** A CIDR, or (as ngrok accepts) a bare address, which stands for itself alone (/32, /128). */
function parseRange(cidr: string): Range | undefined {
  const text = cidr.trim();
  try {
    if (text.includes("/")) return ipaddr.parseCIDR(text);
    const address = ipaddr.parse(text);
    return [address, address.kind() === "ipv4" ? 32 : 128];
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
    ip_policies: z
      .unknown()
      .refine((value) => value === undefined, {
        error: "is not supported: IP policies are objects of ngrok's API that Tollgate has no store for; list their CIDRs under allow or deny",
      })
      .optional()
      .describe("Not supported (ngrok's IP policy objects): write the CIDRs under allow or deny."),
  })
  .refine((config) => config.allow !== undefined || config.deny !== undefined, { message: "must have allow or deny" });

/** A CIDR as written in the config, and parsed. */
type Cidr = { readonly text: string; readonly range: Range };

/**
 * The first of `cidrs` that `address` lies in, as written; an IPv4-mapped IPv6 address is checked as IPv4
 * against IPv4 ranges.
 */
function matchingCidr(address: ipaddr.IPv4 | ipaddr.IPv6 | undefined, cidrs: readonly Cidr[]): string | undefined {
  if (!address) return undefined;
  const mapped = address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress() ? (address as ipaddr.IPv6).toIPv4Address() : undefined;
  for (const {
    text,
    range: [range, bits],
  } of cidrs) {
    if (address.kind() === range.kind() && address.match(range, bits)) return text;
    if (mapped && range.kind() === "ipv4" && mapped.match(range, bits)) return text;
  }
  return undefined;
}

const cidrsOf = (texts: readonly string[]): Cidr[] => texts.map((text) => ({ text: text.trim(), range: parseRange(text)! }));

function parseAddress(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  try {
    return ipaddr.parse(ip);
  } catch {
    return undefined;
  }
}

export interface RestrictIpsVars {
  /** The client address is not allowed: answered 403, or would have with `enforce: false`. */
  denied: boolean;
  /** As ngrok's: 'allow' or 'deny' once the action ran, '' before. */
  action: string;
  /** The CIDR (as written) that decided: the deny CIDR the address lies in, else the allow CIDR; '' for none. */
  matched_cidr: string;
  /** Why the check could not be made (an address that does not parse), else ''. */
  error: ResultError;
}

declare module "./results.ts" {
  interface ActionVars {
    restrict_ips: RestrictIpsVars;
  }
}

export const restrictIpsResults = declareResults<RestrictIpsVars>(
  "restrict_ips",
  { denied: BOOL, action: STRING, matched_cidr: STRING, error: ERROR_SHAPE },
  () => ({ denied: false, action: "", matched_cidr: "", error: noError() }),
);

export const restrictIpsAction = defineAction({
  type: "restrict-ips",
  config: restrictIpsConfig,
  configOptional: false,
  results: restrictIpsResults,
  simulation: { check: true, passed: (exchange) => (exchange.vars.restrict_ips.denied ? "shadow_denied" : undefined) },
  compile(config, context) {
    const allow = config.allow && cidrsOf(config.allow);
    const deny = cidrsOf(config.deny ?? []);
    return {
      type: "restrict-ips",
      run(exchange) {
        const address = parseAddress(exchange.clientIp);
        // An address that does not parse is in no range: refused by an allow-list, not by a deny-list.
        const deniedBy = matchingCidr(address, deny);
        const allowedBy = allow && matchingCidr(address, allow);
        const denied = deniedBy !== undefined || (allow !== undefined && allowedBy === undefined);
        const result = exchange.vars.restrict_ips;
        result.denied = denied;
        result.action = denied ? "deny" : "allow";
        result.matched_cidr = deniedBy ?? allowedBy ?? "";
        result.error = address
          ? { code: "", message: "" }
          : { code: "ERR_RESTRICT_IPS_NO_ADDRESS", message: "The client address is missing or not an IP address." };
        if (!denied || !config.enforce) return undefined;
        return new ServiceError(403, ErrorCode.denied, "The client address is not allowed by the traffic policy.", {
          details: { action: context.position },
        }).toResponse();
      },
    };
  },
});

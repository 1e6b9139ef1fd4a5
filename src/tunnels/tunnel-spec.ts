/** What the edge accepts in a start_tunnel frame: http tunnels with a valid traffic policy, or labeled tunnels. */

import { compilePolicy } from "../policy/compile.ts";
import { formatIssue } from "../policy/issues.ts";
import { TunnelFailure, type FrameOf } from "../relay/index.ts";
import { isValidLabel } from "./hostnames.ts";

export interface TunnelSpec {
  readonly name: string;
  /** `endpoint`: served at a public host; `labeled`: matched by labels, no public URL. */
  readonly kind: "endpoint" | "labeled";
  readonly labels?: Readonly<Record<string, string>>;
  readonly forwardsTo: string;
  readonly metadata?: string;
  /** The traffic policy document as sent (already validated); compiled again where traffic is served. */
  readonly trafficPolicy?: unknown;
  readonly subdomain?: string;
  /** Shares its host with the account's other pooled tunnels (host-claims.ts). */
  readonly poolingEnabled: boolean;
}

export type SpecResult = { ok: true; spec: TunnelSpec } | { ok: false; code: string; message: string };

const WORKERS_INGRESS_NOTE = "Cloudflare Workers ingress accepts only HTTP(S) requests, so this edge cannot take raw TCP or TLS connections; use proto: http";

/**
 * Checks a start_tunnel frame. Never throws: every frame gets an answer, and a refusal says why. The
 * traffic policy is bounded in size, depth and cost by compilePolicy (src/policy/limits.ts) before anything
 * walks it recursively; the catch is for bugs, so that even one of those is an answer, not a dead session.
 */
export function validateTunnelStart(frame: FrameOf<"start_tunnel">): SpecResult {
  try {
    return checkTunnelStart(frame);
  } catch (error) {
    return refused(TunnelFailure.internal, `the tunnel definition could not be checked: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function checkTunnelStart(frame: FrameOf<"start_tunnel">): SpecResult {
  const proto = frame.proto?.toLowerCase();
  if (frame.labels && Object.keys(frame.labels).length > 0) {
    if (proto) return refused(TunnelFailure.invalidDefinition, "a tunnel has either labels or proto, not both");
    if (frame.subdomain) return refused(TunnelFailure.invalidDefinition, "a labeled tunnel has no public host, so no subdomain");
    if (frame.pooling_enabled) return refused(TunnelFailure.invalidDefinition, "a labeled tunnel has no public host, so no pool to join");
  } else if (proto === "tcp" || proto === "tls") {
    return refused(TunnelFailure.unsupportedProto, `${proto} tunnels are not supported: ${WORKERS_INGRESS_NOTE}`);
  } else if (proto !== "http" && proto !== "https") {
    return refused(TunnelFailure.invalidDefinition, `proto must be http (or tcp/tls, which this edge cannot serve), got ${JSON.stringify(frame.proto ?? "")}`);
  }
  if (frame.subdomain !== undefined && !isValidLabel(frame.subdomain)) {
    return refused(
      TunnelFailure.invalidDefinition,
      `subdomain ${JSON.stringify(frame.subdomain)} is not a DNS label (a-z, 0-9 and '-', 1 to 63 characters, no '-' at either end)`,
    );
  }
  if (frame.traffic_policy !== undefined && frame.traffic_policy !== null) {
    const compiled = compilePolicy(frame.traffic_policy, { prefix: ["traffic_policy"], origin: "tenant" });
    if (!compiled.ok) return refused(TunnelFailure.invalidTrafficPolicy, compiled.issues.map(formatIssue).join("\n"));
  }
  const labeled = frame.labels !== undefined && Object.keys(frame.labels).length > 0;
  return {
    ok: true,
    spec: {
      name: frame.name,
      kind: labeled ? "labeled" : "endpoint",
      labels: labeled ? frame.labels : undefined,
      forwardsTo: frame.forwards_to,
      metadata: frame.metadata,
      trafficPolicy: frame.traffic_policy ?? undefined,
      subdomain: frame.subdomain,
      poolingEnabled: frame.pooling_enabled === true,
    },
  };
}

function refused(code: string, message: string): SpecResult {
  return { ok: false, code, message };
}

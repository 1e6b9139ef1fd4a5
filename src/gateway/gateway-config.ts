/** policies/gateway.yaml: edges (host names) and their routes, each with an upstream and a traffic policy. */

import { z } from "zod";
import { compilePolicy, emptyPolicy, loadPolicy, type CompiledPolicy, type CompileResult } from "../policy/compile.ts";
import type { PathSegment, PolicyIssue } from "../policy/issues.ts";
import { readSource } from "../policy/source.ts";
import { fromZodIssues } from "../policy/zod-issues.ts";
import { parseUpstream, type Upstream } from "./upstream-spec.ts";

export const GATEWAY_FILE = "policies/gateway.yaml";

const idSchema = z.string({ error: "must be a string" }).regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1 to 64 letters, digits, '_' or '-'");

const hostnameSchema = z
  .string({ error: "must be a string" })
  .regex(/^(\*|(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])$/, "must be a lower-case host name without port, '*.<domain>' or '*'");

const routeSchema = z.strictObject({
  id: idSchema.describe("Route id, unique within its edge; the management API's route {id}."),
  match: z
    .string({ error: "must be a string" })
    .regex(/^\/[^?#\s]*$/, "must be a path prefix starting with '/'")
    .describe("Path prefix: '/api' matches /api and /api/…, not /apix."),
  upstream: z.string({ error: "must be a string" }).describe("'management', 'echo', an origin URL (http:// or https://) or a TCP address (tcp://host:port)."),
  traffic_policy: z.union([z.string(), z.record(z.string(), z.unknown())], { error: "must be a file name under policies/ or an inline policy map" }).optional(),
});

const edgeSchema = z.strictObject({
  id: idSchema.describe("Edge id; the management API's {edge_id}."),
  hostnames: z.array(hostnameSchema, { error: "must be a list of host names" }).min(1, "must have at least 1 host name"),
  routes: z.array(routeSchema, { error: "must be a list of routes" }).min(1, "must have at least 1 route"),
});

export const gatewayConfigSchema = z.strictObject({
  edges: z.array(edgeSchema, { error: "must be a list of edges" }).min(1, "must have at least 1 edge"),
});

/** A route's traffic policy, or the located issues that keep it from loading. */
export type RoutePolicy = { readonly ok: true; readonly policy: CompiledPolicy } | { readonly ok: false; readonly issues: readonly PolicyIssue[] };

export interface Route {
  readonly edgeId: string;
  readonly id: string;
  readonly match: string;
  readonly upstream: Upstream;
  /** Compiled at load or on the first call (see GatewayLoadOptions.policies); the same answer on every call. */
  policy(): RoutePolicy;
}

export interface Edge {
  readonly id: string;
  readonly hostnames: readonly string[];
  readonly routes: readonly Route[];
}

export interface GatewayConfig {
  readonly edges: readonly Edge[];
}

export type GatewayConfigResult = { ok: true; config: GatewayConfig } | { ok: false; issues: PolicyIssue[] };

export interface GatewayLoadOptions {
  /**
   * The tunnel domain (TUNNEL_DOMAIN, normalized): hosts `<label>.<domain>` are tunnel hosts, so an edge host
   * name under it would be shadowed by (or claimable as) a tunnel and is refused.
   */
  readonly tunnelDomain?: string;
  /**
   * "at-load" (the default: policy:check, the build, tests): every policy file and inline policy is compiled
   * and every issue reported. "on-first-use" (the Worker): gateway.yaml is checked at load, and a route's policy
   * compiled when the route first asks for it, so an isolate's first request does not compile every file;
   * `onPolicyIssues` hears the issues of a policy that does not compile, once.
   */
  readonly policies?: "at-load" | "on-first-use";
  readonly onPolicyIssues?: (issues: readonly PolicyIssue[]) => void;
}

/** Compiles on the first call and answers the same afterwards. */
function once(compile: () => CompileResult, onIssues: (issues: readonly PolicyIssue[]) => void): () => RoutePolicy {
  let outcome: RoutePolicy | undefined;
  return () => {
    if (outcome) return outcome;
    const result = compile();
    outcome = result.ok ? { ok: true, policy: result.policy } : { ok: false, issues: result.issues };
    if (!outcome.ok) onIssues(outcome.issues);
    return outcome;
  };
}

const ALWAYS_EMPTY: RoutePolicy = Object.freeze({ ok: true, policy: emptyPolicy });

/** Loads the gateway from the bundled files (path under the repository → text); reports every issue at once. */
export function loadGatewayConfig(files: Readonly<Record<string, string>>, options: GatewayLoadOptions = {}): GatewayConfigResult {
  const tunnelDomain = options.tunnelDomain ?? "";
  const atLoad = options.policies !== "on-first-use";
  const issues: PolicyIssue[] = [];
  // At load, issues are collected below; on first use, the caller hears them.
  const onIssues = atLoad ? () => {} : (options.onPolicyIssues ?? (() => {}));
  /** Compiles now (at load, collecting its issues) or wraps it for first use. */
  const policyOf = (compile: () => CompileResult): (() => RoutePolicy) => {
    const policy = once(compile, onIssues);
    if (atLoad) {
      const outcome = policy();
      if (!outcome.ok) issues.push(...outcome.issues);
    }
    return policy;
  };
  // One compilation per file, shared by the routes that name it.
  const policies = new Map<string, () => RoutePolicy>();
  for (const [file, text] of Object.entries(files)) {
    if (file !== GATEWAY_FILE)
      policies.set(
        file,
        policyOf(() => loadPolicy(text, file)),
      );
  }

  const text = files[GATEWAY_FILE];
  if (text === undefined) return { ok: false, issues: [...issues, { file: GATEWAY_FILE, path: [], message: "file is missing" }] };
  const source = readSource(text, GATEWAY_FILE);
  if (!source.ok) return { ok: false, issues: inFileOrder(files, [...issues, ...source.issues]) };
  const { value, lineOf } = source.document;
  const place = (path: PathSegment[]) => ({ file: GATEWAY_FILE, line: lineOf(path) });
  const issue = (path: PathSegment[], message: string) => issues.push({ ...place(path), path, message });

  const parsed = gatewayConfigSchema.safeParse(value);
  if (!parsed.success) {
    const schemaIssues = fromZodIssues(parsed.error.issues, value, place);
    // Inline policies are checked all the same, so one run of policy:check reports everything.
    return { ok: false, issues: inFileOrder(files, [...issues, ...schemaIssues, ...inlinePolicyIssues(value, lineOf)]) };
  }

  const edges: Edge[] = [];
  const edgeIds = new Set<string>();
  const hostOwners = new Map<string, string>();
  parsed.data.edges.forEach((edgeDoc, edgeIndex) => {
    if (edgeIds.has(edgeDoc.id)) issue(["edges", edgeIndex, "id"], `duplicate edge id '${edgeDoc.id}'`);
    edgeIds.add(edgeDoc.id);
    edgeDoc.hostnames.forEach((hostname, hostIndex) => {
      const owner = hostOwners.get(hostname);
      if (owner) issue(["edges", edgeIndex, "hostnames", hostIndex], `host name '${hostname}' is already served by edge '${owner}'`);
      if (isUnderTunnelDomain(hostname, tunnelDomain)) {
        issue(
          ["edges", edgeIndex, "hostnames", hostIndex],
          `host name '${hostname}' is under the tunnel domain '${tunnelDomain}' (TUNNEL_DOMAIN), where every host is a tunnel's: use a host name outside it, or another TUNNEL_DOMAIN`,
        );
      }
      hostOwners.set(hostname, edgeDoc.id);
    });
    const routeIds = new Set<string>();
    const matches = new Set<string>();
    const routes: Route[] = [];
    edgeDoc.routes.forEach((routeDoc, routeIndex) => {
      const at = (key: string): PathSegment[] => ["edges", edgeIndex, "routes", routeIndex, key];
      if (routeIds.has(routeDoc.id)) issue(at("id"), `duplicate route id '${routeDoc.id}' in edge '${edgeDoc.id}'`);
      routeIds.add(routeDoc.id);
      const match = normalizePrefix(routeDoc.match);
      if (matches.has(match)) issue(at("match"), `another route of edge '${edgeDoc.id}' already matches '${match}'`);
      matches.add(match);
      const upstream = parseUpstream(routeDoc.upstream);
      if (!upstream.ok) issue(at("upstream"), upstream.message);
      const policy = routePolicy(routeDoc.traffic_policy, at("traffic_policy"), policies, policyOf, lineOf, issues);
      if (upstream.ok && policy) routes.push({ edgeId: edgeDoc.id, id: routeDoc.id, match, upstream: upstream.upstream, policy });
    });
    edges.push({ id: edgeDoc.id, hostnames: edgeDoc.hostnames, routes });
  });

  return issues.length > 0 ? { ok: false, issues: inFileOrder(files, issues) } : { ok: true, config: { edges } };
}

/** Issues by file, in the order of `files` (gateway.yaml where it sits), then by line; stable otherwise. */
function inFileOrder(files: Readonly<Record<string, string>>, issues: readonly PolicyIssue[]): PolicyIssue[] {
  const order = new Map(Object.keys(files).map((file, index) => [file, index]));
  const rank = (issue: PolicyIssue) => order.get(issue.file ?? "") ?? order.size;
  return [...issues].sort((a, b) => rank(a) - rank(b) || (a.line ?? 0) - (b.line ?? 0));
}

/** The issues of every inline policy of a gateway.yaml whose own schema failed (their routes are not built). */
function inlinePolicyIssues(value: unknown, lineOf: (path: readonly PathSegment[]) => number | undefined): PolicyIssue[] {
  const list = (container: unknown, key: string): unknown[] => {
    const items = container !== null && typeof container === "object" ? (container as Record<string, unknown>)[key] : undefined;
    return Array.isArray(items) ? items : [];
  };
  const out: PolicyIssue[] = [];
  for (const [edgeIndex, edge] of list(value, "edges").entries()) {
    for (const [routeIndex, route] of list(edge, "routes").entries()) {
      const reference = route !== null && typeof route === "object" ? (route as Record<string, unknown>).traffic_policy : undefined;
      if (reference === null || typeof reference !== "object" || Array.isArray(reference)) continue;
      const result = compilePolicy(reference, { file: GATEWAY_FILE, lineOf, prefix: ["edges", edgeIndex, "routes", routeIndex, "traffic_policy"] });
      if (!result.ok) out.push(...result.issues);
    }
  }
  return out;
}

/** `api.<domain>` and `*.<domain>` (or deeper) are tunnel hosts; `*` and wider wildcards only fall back behind them. */
function isUnderTunnelDomain(hostname: string, tunnelDomain: string): boolean {
  if (tunnelDomain === "") return false;
  const name = hostname.startsWith("*.") ? hostname.slice(2) : hostname;
  return name.endsWith(`.${tunnelDomain}`) || (hostname.startsWith("*.") && name === tunnelDomain);
}

function normalizePrefix(prefix: string): string {
  return prefix.length > 1 ? prefix.replace(/\/+$/, "") : prefix;
}

/** The route's policy (undefined, with an issue, when it names no policy file). */
function routePolicy(
  reference: string | Record<string, unknown> | undefined,
  path: PathSegment[],
  policies: ReadonlyMap<string, () => RoutePolicy>,
  policyOf: (compile: () => CompileResult) => () => RoutePolicy,
  lineOf: (path: readonly PathSegment[]) => number | undefined,
  issues: PolicyIssue[],
): (() => RoutePolicy) | undefined {
  if (reference === undefined) return () => ALWAYS_EMPTY;
  if (typeof reference === "string") {
    const file = `policies/${reference.replace(/^(\.\/)?(policies\/)?/, "")}`;
    const policy = policies.get(file);
    if (!policy) {
      const known = [...policies.keys()];
      issues.push({
        file: GATEWAY_FILE,
        line: lineOf(path),
        path,
        message: `no policy file '${file}' (policy files: ${known.length > 0 ? known.join(", ") : "none"})`,
      });
      return undefined;
    }
    return policy;
  }
  return policyOf(() => compilePolicy(reference, { file: GATEWAY_FILE, lineOf, prefix: path }));
}

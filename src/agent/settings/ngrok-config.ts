/**
 * ngrok agent config files (v2 and v3) read as Tollgate config: each key ngrok documents is mapped onto
 * Tollgate's meaning, ignored with a notice when it has no meaning here and ignoring it changes nothing the
 * user relies on, or refused by name; unknown keys are refused. Every Tollgate path remembers where it came
 * from in the file, so later errors point at the ngrok key the user wrote.
 */

import type { PathSegment, PolicyIssue } from "../../policy/issues.ts";

export type ConfigFormat = "tollgate" | "ngrok-v2" | "ngrok-v3";

export interface Translation {
  readonly format: ConfigFormat;
  /** The file's settings in Tollgate's shape (unvalidated: the agent config schema checks them). */
  readonly value: Record<string, unknown>;
  /** Problems found while mapping: refused keys and values, by their path in the file. */
  readonly issues: Array<Omit<PolicyIssue, "file" | "line">>;
  /** Keys read and ignored (they mean nothing here), by their path in the file; the message is the reason. */
  readonly notices: Array<Omit<PolicyIssue, "file" | "line">>;
  /** Where a Tollgate path came from in the file. */
  sourcePath(path: readonly PathSegment[]): PathSegment[];
}

export const WORKERS_HTTP_ONLY = "Tollgate tunnels carry HTTP(S) only: Cloudflare Workers ingress accepts only HTTP(S)";

/** Agent-level keys (v2: top level, v3: under `agent`) with a Tollgate meaning: ngrok key → Tollgate key. */
const AGENT_KEYS: Record<string, string> = {
  authtoken: "api_key",
  api_key: "api_key",
  server_addr: "server_addr",
  connect_url: "server_addr",
  web_addr: "web_addr",
  web_allow_hosts: "web_allow_hosts",
  inspect_db_size: "inspect_db_size",
  log: "log",
  log_level: "log_level",
  log_format: "log_format",
  metadata: "metadata",
  region: "region",
  console_ui: "console_ui",
};

/**
 * Agent-level keys ngrok documents that mean nothing to Tollgate and whose absence changes nothing the user
 * relies on (updates, colours, timings the edge decides): read, ignored, and named in a notice.
 */
const IGNORED_AGENT_KEYS: Record<string, string> = {
  update_check: "Tollgate does not update itself (npm does)",
  update_channel: "Tollgate does not update itself (npm does)",
  console_ui_color: "the status screen takes the terminal's colours (NO_COLOR turns them off)",
  heartbeat_interval: "the edge sets the heartbeat (TUNNEL_HEARTBEAT_MS)",
  heartbeat_tolerance: "the edge sets the heartbeat (TUNNEL_HEARTBEAT_MS)",
  connect_timeout: "the agent gives the edge 10 s to answer its connection",
  crl_noverify: "the agent checks no certificate revocation list",
};

/**
 * Agent-level keys ngrok documents that Tollgate refuses, with the reason: ignoring them would change where
 * or how the agent connects, or whom it trusts.
 */
const REFUSED_AGENT_KEYS: Record<string, string> = {
  proxy_url: "the agent connects to the edge directly; remove it",
  root_cas: "the agent trusts Node's CA store; remove it",
  connect_cas: "the agent trusts Node's CA store; remove it",
  tls_client_crt: "the edge authenticates agents by API key, not client certificates; remove it",
  tls_client_key: "the edge authenticates agents by API key, not client certificates; remove it",
  remote_management: "the agent has no remote management; remove it (false is accepted)",
  dns_resolver_ips: "the agent uses the system resolver; remove it",
  connect_timeout: "the agent's connection timeout is fixed; remove it",
  connect_interface: "the agent uses the system's route to the edge; remove it",
};

/** Tunnel keys (v2 and v3 `tunnels:`) Tollgate maps as they are. */
const TUNNEL_KEYS = new Set(["proto", "addr", "inspect", "metadata", "labels", "traffic_policy", "subdomain", "pooling_enabled"]);

const REFUSED_TUNNEL_KEYS: Record<string, string> = {
  auth: "basic auth is not a Tollgate tunnel feature; protect the service itself or use a traffic policy",
  basic_auth: "basic auth is not a Tollgate tunnel feature; protect the service itself or use a traffic policy",
  bind_tls: "the edge decides the scheme of public URLs; remove it",
  schemes: "the edge decides the scheme of public URLs; remove it",
  host_header: "the local service receives the public Host header; remove it",
  remote_addr: WORKERS_HTTP_ONLY,
  crt: WORKERS_HTTP_ONLY,
  key: WORKERS_HTTP_ONLY,
  terminate_at: WORKERS_HTTP_ONLY,
  request_header: "use an add-headers or remove-headers action of traffic_policy",
  response_header: "use an add-headers or remove-headers action of traffic_policy",
  ip_restriction: "use a deny action with an inCidrRanges() expression in traffic_policy",
};

const ENDPOINT_KEYS = new Set(["name", "url", "upstream", "traffic_policy", "metadata", "bindings", "pooling_enabled"]);

const isMap = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/** Which kind of file this is: ngrok's (version 2 or 3) or Tollgate's own. */
export function configFormat(value: unknown): ConfigFormat {
  if (!isMap(value)) return "tollgate";
  const version = String(value.version ?? "");
  if (version === "2") return "ngrok-v2";
  if (version === "3") return "ngrok-v3";
  return "tollgate";
}

/** A public host name (`myapp.example.com`, `https://myapp.ngrok.app`) → the subdomain label Tollgate can ask for. */
function subdomainOf(value: unknown): { ok: true; label: string } | { ok: false; message: string } {
  if (typeof value !== "string") return { ok: false, message: "must be a host name or URL" };
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase();
  if (scheme === "tcp" || scheme === "tls") return { ok: false, message: `${scheme}:// endpoints are not supported: ${WORKERS_HTTP_ONLY}` };
  if (scheme !== undefined && scheme !== "http" && scheme !== "https") return { ok: false, message: `scheme ${scheme} is not supported (http or https)` };
  const host = value
    .replace(/^[a-z][a-z0-9+.-]*:\/\//i, "")
    .replace(/[:/].*$/, "")
    .toLowerCase();
  if (host.startsWith("*.")) return { ok: false, message: "wildcard host names are not supported: a tunnel asks for one label under the edge's tunnel domain" };
  const label = host.split(".")[0] ?? "";
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(label))
    return { ok: false, message: `must start with a DNS label (a-z, 0-9, '-'), got ${JSON.stringify(value)}` };
  return { ok: true, label };
}

class Mapper {
  readonly value: Record<string, unknown> = {};
  readonly issues: Array<Omit<PolicyIssue, "file" | "line">> = [];
  readonly notices: Array<Omit<PolicyIssue, "file" | "line">> = [];
  private readonly moves: Array<[PathSegment[], PathSegment[]]> = [];

  set(target: PathSegment[], value: unknown, source: PathSegment[]): void {
    let node = this.value;
    for (const segment of target.slice(0, -1)) node = (node[segment] ??= {}) as Record<string, unknown>;
    node[target[target.length - 1]] = value;
    this.moves.push([target, source]);
  }

  /** Says where `target` would come from, for a key that may be missing (so "is required" names it). */
  alias(target: PathSegment[], source: PathSegment[]): void {
    this.moves.push([target, source]);
  }

  refuse(path: PathSegment[], message: string): void {
    this.issues.push({ path, message });
  }

  ignore(path: PathSegment[], reason: string): void {
    this.notices.push({ path, message: reason });
  }

  sourcePath = (path: readonly PathSegment[]): PathSegment[] => {
    let best: [PathSegment[], PathSegment[]] | undefined;
    for (const move of this.moves) {
      const [target] = move;
      if (target.length <= path.length && target.every((segment, index) => segment === path[index]) && (!best || target.length > best[0].length)) best = move;
    }
    return best ? [...best[1], ...path.slice(best[0].length)] : [...path];
  };
}

/** `authtoken` and `api_key` both mean Tollgate's one credential; if a file has both they must agree. */
function mapAgentKeys(mapper: Mapper, section: Record<string, unknown>, at: PathSegment[]): void {
  for (const [key, value] of Object.entries(section)) {
    const target = AGENT_KEYS[key];
    if (IGNORED_AGENT_KEYS[key] !== undefined || (key === "remote_management" && value === false)) {
      mapper.ignore([...at, key], IGNORED_AGENT_KEYS[key] ?? "the agent has no remote management");
      continue;
    }
    if (target === undefined) {
      mapper.refuse([...at, key], REFUSED_AGENT_KEYS[key] ? `not supported by Tollgate: ${REFUSED_AGENT_KEYS[key]}` : "unknown key");
      continue;
    }
    if (target === "api_key" && mapper.value.api_key !== undefined && mapper.value.api_key !== value) {
      mapper.refuse([...at, key], "authtoken and api_key differ: Tollgate has one credential (its API key), so give one of them");
      continue;
    }
    // ngrok's server_addr / connect_url is host:port (TLS); a URL says the scheme itself.
    const mapped = target === "server_addr" && typeof value === "string" && !/^[a-z]+:\/\//i.test(value) ? `https://${value}` : value;
    mapper.set([target], mapped, [...at, key]);
  }
}

function mapTunnels(mapper: Mapper, tunnels: unknown, at: PathSegment[]): void {
  if (!isMap(tunnels)) {
    mapper.set(["tunnels"], tunnels, at); // the schema says what is wrong with it
    return;
  }
  for (const [name, tunnel] of Object.entries(tunnels)) {
    const here = [...at, name];
    if (!isMap(tunnel)) {
      mapper.set(["tunnels", name], tunnel, here);
      continue;
    }
    const definition: Record<string, unknown> = {};
    mapper.set(["tunnels", name], definition, here);
    for (const [key, value] of Object.entries(tunnel)) {
      if (key === "proto" && (value === "tcp" || value === "tls")) mapper.refuse([...here, key], `${value} tunnels are not supported: ${WORKERS_HTTP_ONLY}`);
      else if (key === "domain" || key === "hostname" || key === "url") {
        const sub = subdomainOf(value);
        if (sub.ok) mapper.set(["tunnels", name, "subdomain"], sub.label, [...here, key]);
        else mapper.refuse([...here, key], sub.message);
      } else if (TUNNEL_KEYS.has(key)) mapper.set(["tunnels", name, key], value, [...here, key]);
      else mapper.refuse([...here, key], REFUSED_TUNNEL_KEYS[key] ? `not supported by Tollgate: ${REFUSED_TUNNEL_KEYS[key]}` : "unknown key");
    }
  }
}

function mapEndpoints(mapper: Mapper, endpoints: unknown, at: PathSegment[]): void {
  if (!Array.isArray(endpoints)) {
    mapper.refuse(at, "must be a list of endpoints");
    return;
  }
  endpoints.forEach((endpoint, index) => {
    const here = [...at, index];
    if (!isMap(endpoint)) {
      mapper.refuse(here, "must be a map (name, url, upstream, …)");
      return;
    }
    const name = typeof endpoint.name === "string" ? endpoint.name : `endpoint_${index}`;
    if (mapper.value.tunnels && (mapper.value.tunnels as Record<string, unknown>)[name] !== undefined) {
      mapper.refuse([...here, "name"], `a tunnel or endpoint named ${JSON.stringify(name)} is defined twice`);
      return;
    }
    mapper.set(["tunnels", name], { proto: "http" }, here);
    mapper.alias(["tunnels", name, "addr"], [...here, "upstream", "url"]);
    for (const [key, value] of Object.entries(endpoint)) {
      if (!ENDPOINT_KEYS.has(key)) {
        mapper.refuse([...here, key], key === "description" ? "not supported by Tollgate: use metadata" : "unknown key");
      } else if (key === "url") {
        const sub = subdomainOf(value);
        if (sub.ok) mapper.set(["tunnels", name, "subdomain"], sub.label, [...here, key]);
        else mapper.refuse([...here, key], sub.message);
      } else if (key === "upstream") {
        if (!isMap(value)) {
          mapper.refuse([...here, key], "must be a map with url");
          continue;
        }
        for (const [upstreamKey, upstreamValue] of Object.entries(value)) {
          if (upstreamKey === "url") mapper.set(["tunnels", name, "addr"], upstreamValue, [...here, key, upstreamKey]);
          else if (upstreamKey === "protocol" && upstreamValue !== "http1")
            mapper.refuse([...here, key, upstreamKey], "only http1 is supported: the agent speaks HTTP/1.1 to local services");
          else if (upstreamKey !== "protocol") mapper.refuse([...here, key, upstreamKey], "unknown key");
        }
      } else if (key === "bindings") {
        if (!Array.isArray(value) || value.some((binding) => binding !== "public")) {
          mapper.refuse([...here, key], 'only ["public"] is supported: Tollgate tunnels are public');
        }
      } else if (key === "traffic_policy" || key === "metadata" || key === "pooling_enabled") mapper.set(["tunnels", name, key], value, [...here, key]);
    }
  });
}

/** Maps a parsed config file onto Tollgate's shape. Tollgate's own files pass through unchanged. */
export function translateConfig(value: unknown): Translation {
  const format = configFormat(value);
  const mapper = new Mapper();
  if (format === "tollgate" || !isMap(value)) {
    return {
      format,
      value: isMap(value) ? value : value === null || value === undefined ? {} : (value as Record<string, unknown>),
      issues: [],
      notices: [],
      sourcePath: (path) => [...path],
    };
  }
  for (const [key, entry] of Object.entries(value)) {
    if (key === "version") continue;
    if (key === "tunnels") mapTunnels(mapper, entry, [key]);
    else if (format === "ngrok-v3" && key === "agent") {
      if (isMap(entry)) mapAgentKeys(mapper, entry, [key]);
      else mapper.refuse([key], "must be a map (authtoken, connect_url, web_addr, …)");
    } else if (format === "ngrok-v3" && key === "endpoints") mapEndpoints(mapper, entry, [key]);
    else if (format === "ngrok-v2") mapAgentKeys(mapper, { [key]: entry }, []);
    else if (AGENT_KEYS[key] ?? IGNORED_AGENT_KEYS[key] ?? REFUSED_AGENT_KEYS[key]) mapper.refuse([key], "belongs under agent: in a version 3 file");
    else mapper.refuse([key], "unknown key");
  }
  return { format, value: mapper.value, issues: mapper.issues, notices: mapper.notices, sourcePath: mapper.sourcePath };
}

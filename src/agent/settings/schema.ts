/**
 * The agent's configuration: the config file (YAML) and tunnel definitions, which the agent API's
 * POST /api/tunnels accepts too. The zod schemas are the single source; defaults are applied here.
 */

import { z } from "zod";
import { parseAddr } from "./addr.ts";

export const DEFAULT_SERVER_ADDR = "http://127.0.0.1:8787";
/** The development key of `npm start` (account acct_dev); never valid on a deployed edge. */
export const DEV_API_KEY = "tgk_dev_local_only_0000000000000000";
export const DEFAULT_WEB_ADDR = "127.0.0.1:4040";
/** `inspect_db_size: 0` means this many bytes. */
export const DEFAULT_INSPECT_DB_SIZE = 50 * 1024 * 1024;

const TUNNEL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const LABEL_KEY = /^[A-Za-z0-9][A-Za-z0-9_.\-/]{0,62}$/;

const addrSchema = z
  .union([z.number(), z.string()], { error: (issue) => (issue.input === undefined ? "is required" : "must be a port, host:port or URL") })
  .superRefine((value, ctx) => {
    const parsed = parseAddr(value);
    if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.message });
  });

/** `labels` as a map, or as ngrok's list of `key=value` strings. */
const labelsSchema = z
  .union([z.record(z.string(), z.string()), z.array(z.string())], { error: "must be a map of strings or a list of 'key=value' strings" })
  .transform((value, ctx) => {
    const entries = Array.isArray(value) ? value.map((item) => item.split("=", 2) as [string, string?]) : Object.entries(value);
    const labels: Record<string, string> = {};
    entries.forEach(([key, label], index) => {
      if (label === undefined) ctx.addIssue({ code: "custom", message: `item ${index + 1} must have the form key=value`, path: [index] });
      else if (!LABEL_KEY.test(key)) ctx.addIssue({ code: "custom", message: `label key ${JSON.stringify(key)} must be 1 to 63 letters, digits or _.-/` });
      else labels[key] = label;
    });
    if (entries.length === 0) ctx.addIssue({ code: "custom", message: "must have at least one label" });
    return labels;
  });

const tunnelFields = {
  proto: z.enum(["http", "tcp", "tls"], { error: 'must be one of "http", "tcp", "tls"' }).optional(),
  addr: addrSchema,
  inspect: z.boolean({ error: "must be true or false" }).default(true),
  metadata: z.string({ error: "must be a string" }).max(4096, "must be at most 4096 characters").optional(),
  labels: labelsSchema.optional(),
  /** A traffic policy document (validated by the policy engine, here and again at the edge). */
  traffic_policy: z.record(z.string(), z.unknown(), { error: "must be a traffic policy (a map with inbound/outbound)" }).optional(),
  /** The public host label wanted (`<subdomain>.<tunnel domain>`); a random one otherwise. */
  subdomain: z
    .string({ error: "must be a string" })
    .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, "must be a DNS label: a-z, 0-9 and '-', 1 to 63 characters")
    .optional(),
  /** Share the public URL with the account's other tunnels that enable pooling too (an endpoint pool, ngrok's `pooling_enabled`). */
  pooling_enabled: z.boolean({ error: "must be true or false" }).optional(),
};

function checkTunnel(tunnel: { proto?: string; labels?: Record<string, string>; subdomain?: string; pooling_enabled?: boolean }, ctx: z.RefinementCtx): void {
  if (tunnel.labels && tunnel.proto) ctx.addIssue({ code: "custom", message: "a tunnel has either labels or proto, not both", path: ["labels"] });
  if (tunnel.labels && tunnel.subdomain) ctx.addIssue({ code: "custom", message: "a labeled tunnel has no public host, so no subdomain", path: ["subdomain"] });
  if (tunnel.labels && tunnel.pooling_enabled)
    ctx.addIssue({ code: "custom", message: "a labeled tunnel has no public host, so no pool to join", path: ["pooling_enabled"] });
}

/** One tunnel of the config file (its name is the map key). */
export const tunnelDefinitionSchema = z.strictObject(tunnelFields).superRefine(checkTunnel);

export const tunnelNameSchema = z
  .string({ error: "must be a string" })
  .regex(TUNNEL_NAME, "must be 1 to 64 letters, digits or _.- (starting with a letter or digit)");

/** The body of POST /api/tunnels: a tunnel definition plus its name. */
export const namedTunnelDefinitionSchema = z.strictObject({ name: tunnelNameSchema, ...tunnelFields }).superRefine(checkTunnel);

const webAddrSchema = z.union([z.literal(false), z.string()], { error: "must be host:port, or false to turn the agent API off" }).superRefine((value, ctx) => {
  if (value === false) return;
  const match = /^(\[[0-9a-fA-F:]+\]|[^:\s]+):(\d{1,5})$/.exec(value);
  if (!match || Number(match[2]) > 65535)
    ctx.addIssue({ code: "custom", message: "must be host:port (e.g. 127.0.0.1:4040), or false to turn the agent API off" });
});

/** Most tunnels one config (all files merged) may define. */
export const MAX_TUNNELS = 100;

/** `log`: stdout, stderr, false (no log) or a file path. */
export const logDestinationSchema = z
  .union([z.literal(false), z.string({ error: "must be stdout, stderr, false or a file path" })], { error: "must be stdout, stderr, false or a file path" })
  .superRefine((value, ctx) => {
    if (value === false) return;
    if (value.length === 0 || value.length > 4096)
      ctx.addIssue({ code: "custom", message: "must be stdout, stderr, false or a file path of 1 to 4096 characters" });
  });

export const LOG_FORMATS = ["logfmt", "json", "term"] as const;
export const LOG_LEVELS = ["debug", "info", "warn", "error", "crit"] as const;

/** ngrok's `--region`: accepted and recorded (the edge, not the agent, decides where traffic enters). */
export const regionSchema = z.string({ error: "must be a string" }).regex(/^[a-z0-9-]{1,32}$/, "must be 1 to 32 of a-z, 0-9 and '-' (e.g. us, eu)");

export const agentConfigSchema = z.strictObject({
  version: z.union([z.literal(1), z.literal("1")], { error: "must be 1 (Tollgate's format), or 2 or 3 (ngrok's)" }).optional(),
  server_addr: z
    .string({ error: "must be a URL" })
    .refine((value) => /^(https?|wss?):\/\/[^\s/]+\/?$/i.test(value), "must be the edge's URL, e.g. http://127.0.0.1:8787 or https://edge.example.com")
    .default(DEFAULT_SERVER_ADDR),
  api_key: z.string({ error: "must be a string" }).min(1, "must not be empty").default(DEV_API_KEY),
  web_addr: webAddrSchema.default(DEFAULT_WEB_ADDR),
  web_allow_hosts: z.array(z.string({ error: "must be a host name" }).min(1), { error: "must be a list of host names" }).default([]),
  inspect_db_size: z
    .number({ error: "must be a number of bytes" })
    .int("must be a whole number of bytes")
    .min(0, "must be 0 (the default, 50 MB) or more")
    .default(0),
  metadata: z.string({ error: "must be a string" }).max(4096, "must be at most 4096 characters").optional(),
  /** Where log lines go (default: none; the status screen shows on a terminal). */
  log: logDestinationSchema.optional(),
  log_format: z.enum(LOG_FORMATS, { error: 'must be one of "logfmt", "json", "term"' }).default("logfmt"),
  log_level: z.enum(LOG_LEVELS, { error: 'must be one of "debug", "info", "warn", "error", "crit"' }).default("info"),
  /** The status screen: on a terminal only (iftty, the default), never (false) or always (true). */
  console_ui: z.union([z.boolean(), z.literal("iftty")], { error: 'must be true, false or "iftty"' }).default("iftty"),
  region: regionSchema.optional(),
  tunnels: z
    .record(tunnelNameSchema, tunnelDefinitionSchema, { error: "must be a map of tunnel name to tunnel definition" })
    .refine((tunnels) => Object.keys(tunnels).length <= MAX_TUNNELS, `must define at most ${MAX_TUNNELS} tunnels`)
    .default({}),
});

export type TunnelDefinition = z.output<typeof tunnelDefinitionSchema>;
export type NamedTunnelDefinition = z.output<typeof namedTunnelDefinitionSchema>;
export type AgentConfig = z.output<typeof agentConfigSchema>;

/** Bytes the request inspector may keep (`inspect_db_size`, 0 meaning the default). */
export function inspectDbBytes(config: Pick<AgentConfig, "inspect_db_size">): number {
  return config.inspect_db_size === 0 ? DEFAULT_INSPECT_DB_SIZE : config.inspect_db_size;
}

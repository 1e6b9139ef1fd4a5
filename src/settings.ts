/**
 * The Worker's settings: every variable of wrangler.toml's [vars] and the TOLLGATE_API_KEYS secret, read and
 * checked once per env object. A bad value is an error naming the variable and what was wrong, never a default.
 */

import { z } from "zod";
import { ACCOUNT_ID, API_KEYS_VAR, type ApiKeyEntry, parseApiKeys } from "./api-keys.ts";
import { normalizeDomain } from "./domain.ts";

/** Defaults of the variables left empty (wrangler.toml says each in its comment). */
export const DEFAULT_RATE_LIMIT_TIMEOUT_MS = 1000;
export const DEFAULT_UPSTREAM_TIMEOUT_MS = 30_000;
export const DEFAULT_HEARTBEAT_MS = 5000;
export const DEFAULT_BODY_CHANNEL_WAIT_MS = 30_000;
export const DEFAULT_EDGE_ACCOUNT = "acct_dev";

/** Below this an agent could not answer a heartbeat across a slow link before its session is taken offline. */
export const MIN_HEARTBEAT_MS = 200;
/** Ceiling of every duration variable (ten minutes): above it a typo (an extra 0) rather than a choice. */
export const MAX_DURATION_MS = 600_000;
/** INGRESS_ID names rate-limit counts: at most this many of `A-Z a-z 0-9 . _ -`. */
export const MAX_INGRESS_ID_CHARS = 64;
/** Keys in TOLLGATE_API_KEYS: every authentication compares the presented key with each, in constant time. */
export const MAX_API_KEYS = 1000;
/** A DNS name's length (RFC 1035). */
const MAX_DOMAIN_CHARS = 253;

export interface Settings {
  /** INGRESS_ID; "" lets the Cloudflare location of each request name its ingress instance. */
  readonly ingressId: string;
  /** TUNNEL_DOMAIN lower-cased without dots at either end; "" turns tunnels off. */
  readonly tunnelDomain: string;
  /** TOLLGATE_EDGE_ACCOUNT: the account that owns the edges of policies/gateway.yaml. */
  readonly edgeAccount: string;
  readonly rateLimitTimeoutMs: number;
  readonly upstreamTimeoutMs: number;
  readonly heartbeatMs: number;
  readonly bodyChannelWaitMs: number;
  /** TOLLGATE_DEBUG_STATS = "1": GET /__tollgate/stats answers. */
  readonly debugStats: boolean;
  readonly apiKeys: readonly ApiKeyEntry[];
}

/** Settings that do not load: the message names each variable and what was wrong with it. */
export class SettingsError extends Error {
  constructor(
    message: string,
    readonly issues: readonly string[],
  ) {
    super(message);
    this.name = "SettingsError";
  }
}

/** A variable as wrangler hands it over: a string, or absent when a test or deployment leaves it out. */
const text = z.string({ error: (issue) => `expected a string, got ${shown(issue.input)}` }).optional();

/** Milliseconds: empty means `fallback`; else a whole number from `min` to MAX_DURATION_MS. */
function milliseconds(fallback: number, min = 1) {
  const expected = min === 1 ? "a positive integer of milliseconds" : `an integer of milliseconds of at least ${min}`;
  return text.transform((value, context) => {
    const trimmed = (value ?? "").trim();
    if (trimmed === "") return fallback;
    const number = /^[0-9]{1,16}$/.test(trimmed) ? Number(trimmed) : Number.NaN;
    if (!(number >= min)) context.addIssue({ code: "custom", message: `expected ${expected}, got ${shown(value)}` });
    else if (number > MAX_DURATION_MS) context.addIssue({ code: "custom", message: `expected at most ${MAX_DURATION_MS} milliseconds, got ${shown(value)}` });
    return number;
  });
}

const DOMAIN_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const INGRESS_ID = new RegExp(`^[A-Za-z0-9._-]{1,${MAX_INGRESS_ID_CHARS}}$`);

const schema = z.object({
  INGRESS_ID: text.transform((value, context) => {
    const id = value ?? "";
    if (id !== "" && !INGRESS_ID.test(id)) {
      context.addIssue({ code: "custom", message: `expected at most ${MAX_INGRESS_ID_CHARS} of A-Z a-z 0-9 . _ -, got ${shown(value)}` });
    }
    return id;
  }),
  TUNNEL_DOMAIN: text.transform((value, context) => {
    const domain = normalizeDomain(value);
    if (domain !== "" && (domain.length > MAX_DOMAIN_CHARS || !domain.split(".").every((label) => DOMAIN_LABEL.test(label)))) {
      context.addIssue({ code: "custom", message: `expected a DNS name (labels of a-z 0-9 -, at most ${MAX_DOMAIN_CHARS} characters), got ${shown(value)}` });
    }
    return domain;
  }),
  TOLLGATE_EDGE_ACCOUNT: text.transform((value, context) => {
    const account = value?.trim() || DEFAULT_EDGE_ACCOUNT;
    if (!ACCOUNT_ID.test(account)) context.addIssue({ code: "custom", message: `expected an account id 'acct_…', got ${shown(value)}` });
    return account;
  }),
  RATE_LIMIT_TIMEOUT_MS: milliseconds(DEFAULT_RATE_LIMIT_TIMEOUT_MS),
  UPSTREAM_TIMEOUT_MS: milliseconds(DEFAULT_UPSTREAM_TIMEOUT_MS),
  TUNNEL_HEARTBEAT_MS: milliseconds(DEFAULT_HEARTBEAT_MS, MIN_HEARTBEAT_MS),
  TUNNEL_BODY_CHANNEL_WAIT_MS: milliseconds(DEFAULT_BODY_CHANNEL_WAIT_MS),
  TOLLGATE_DEBUG_STATS: text.transform((value, context) => {
    const flag = (value ?? "").trim();
    if (flag !== "" && flag !== "0" && flag !== "1")
      context.addIssue({ code: "custom", message: `expected "1" (on), "0" or empty (off), got ${shown(value)}` });
    return flag === "1";
  }),
  [API_KEYS_VAR]: text.transform((value, context) => {
    const parsed = parseApiKeys(value);
    if (!parsed.ok) {
      // The problem names the entry, never its text: the value is a secret.
      context.addIssue({ code: "custom", message: parsed.problem });
      return [];
    }
    if (parsed.entries.length > MAX_API_KEYS)
      context.addIssue({ code: "custom", message: `expected at most ${MAX_API_KEYS} keys, got ${parsed.entries.length}` });
    return parsed.entries;
  }),
});

/** The variables this module reads (the settings' sources), for messages and tests. */
export const SETTINGS_VARIABLES = Object.keys(schema.shape) as readonly (keyof typeof schema.shape)[];

/** Reads and checks every variable of `env`; the error lists each bad one (`NAME: what was wrong`). */
export function parseSettings(env: Readonly<Record<string, unknown>>): Settings | SettingsError {
  const sources = Object.fromEntries(SETTINGS_VARIABLES.map((name) => [name, env[name]]));
  const result = schema.safeParse(sources);
  if (!result.success) {
    const issues = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    return new SettingsError(`The gateway's settings do not load: ${issues.join("; ")}`, issues);
  }
  const vars = result.data;
  return {
    ingressId: vars.INGRESS_ID,
    tunnelDomain: vars.TUNNEL_DOMAIN,
    edgeAccount: vars.TOLLGATE_EDGE_ACCOUNT,
    rateLimitTimeoutMs: vars.RATE_LIMIT_TIMEOUT_MS,
    upstreamTimeoutMs: vars.UPSTREAM_TIMEOUT_MS,
    heartbeatMs: vars.TUNNEL_HEARTBEAT_MS,
    bodyChannelWaitMs: vars.TUNNEL_BODY_CHANNEL_WAIT_MS,
    debugStats: vars.TOLLGATE_DEBUG_STATS,
    apiKeys: vars[API_KEYS_VAR],
  };
}

/**
 * The settings of `env`, parsed on its first use. Keyed by the env object the platform hands to the Worker and
 * to each Durable Object (a test's `{ ...env, X: "…" }` is another object, so it is parsed on its own): a memo of
 * a pure function, collected with its env, not state a request could change.
 */
const parsedByEnv = new WeakMap<object, Settings | SettingsError>();

/** The settings of `env`; throws the SettingsError when a variable is bad. */
export function settingsOf(env: object): Settings {
  let parsed = parsedByEnv.get(env);
  if (parsed === undefined) {
    parsed = parseSettings(env as Record<string, unknown>);
    parsedByEnv.set(env, parsed);
    if (parsed instanceof SettingsError) console.error(`Tollgate: ${parsed.message}`);
    else if (parsed.apiKeys.length === 0) console.warn(`Tollgate: ${API_KEYS_VAR} is not set, so the management API accepts no API key.`);
  }
  if (parsed instanceof SettingsError) throw parsed;
  return parsed;
}

/** A value as a message shows it: quoted and cut to 40 characters, so a pasted secret or a long typo stays short. */
function shown(value: unknown): string {
  if (typeof value !== "string") return value === undefined ? "nothing" : typeof value;
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

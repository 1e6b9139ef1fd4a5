/**
 * API key authentication: `Authorization: Bearer <key>` against the SHA-256 hashes configured in
 * `TOLLGATE_API_KEYS`, compared in constant time. Also used by the tunnels to authenticate agents.
 */

import type { MiddlewareHandler } from "hono";
import type { Env } from "../env.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import type { ManagementEnv } from "./context.ts";

/** The configuration variable (a secret when deployed) that holds the accounts' key hashes. */
export const API_KEYS_VAR = "TOLLGATE_API_KEYS";

const ACCOUNT_ID = /^acct_[A-Za-z0-9_-]{1,64}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
/**
 * `Bearer <key>` with the scheme in any ASCII case (RFC 9110: schemes are case-insensitive; some clients
 * send `bearer`), exactly one space and no other whitespace. The gateway's policy rate-limits per
 * Authorization header value (its scheme lower-cased), so whitespace variants, which could be made without
 * end, stay refused.
 */
const BEARER = /^[Bb][Ee][Aa][Rr][Ee][Rr] ([^\s]+)$/;
const UNAUTHORIZED_HEADERS = { "www-authenticate": 'Bearer realm="tollgate"' };

export interface ApiKeyEntry {
  readonly accountId: string;
  readonly hash: Uint8Array;
}

export type ApiKeysConfig = { ok: true; entries: readonly ApiKeyEntry[] } | { ok: false; problem: string };

/**
 * Parses `TOLLGATE_API_KEYS`: entries `<account_id>:<sha256 hex of the key>` separated by commas, spaces
 * or new lines. An account may have several keys. Unset or empty means no key is accepted.
 */
export function parseApiKeys(value: string | undefined): ApiKeysConfig {
  const entries: ApiKeyEntry[] = [];
  const items = (value ?? "").split(/[\s,]+/).filter((item) => item !== "");
  for (const [index, item] of items.entries()) {
    const separator = item.lastIndexOf(":");
    const accountId = item.slice(0, separator);
    const hex = item.slice(separator + 1).toLowerCase();
    if (separator < 0 || !ACCOUNT_ID.test(accountId)) {
      return { ok: false, problem: `entry ${index + 1} must start with an account id 'acct_…' followed by ':'` };
    }
    if (!SHA256_HEX.test(hex)) {
      return { ok: false, problem: `entry ${index + 1} (account ${accountId}) must end with 64 hex digits, the SHA-256 of the key` };
    }
    entries.push({ accountId, hash: hexToBytes(hex) });
  }
  return { ok: true, entries };
}

let cached: { value: string | undefined; config: ApiKeysConfig } | undefined;

function apiKeysOf(env: Env): ApiKeysConfig {
  const value = env.TOLLGATE_API_KEYS;
  if (cached && cached.value === value) return cached.config;
  const config = parseApiKeys(value);
  if (config.ok && config.entries.length === 0) {
    console.warn(`Tollgate: ${API_KEYS_VAR} is not set, so the management API accepts no API key.`);
  }
  cached = { value, config };
  return config;
}

/** SHA-256 of a key as lower-case hex: what `TOLLGATE_API_KEYS` stores. */
export async function hashApiKey(key: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)));
  return [...digest].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * Authenticates an `Authorization` header value. Missing or not `Bearer …` → 401 ERR_SVC_200; a key that
 * matches no configured hash → 401 ERR_SVC_203. Every configured hash is compared, in constant time, so
 * the time taken does not tell which (or whether a) prefix matched. The key is never echoed.
 */
export async function authenticateApiKey(
  authorization: string | null,
  env: Env,
): Promise<{ ok: true; accountId: string; credentialId: string } | { ok: false; error: ServiceError }> {
  if (authorization === null || authorization.trim() === "") {
    return {
      ok: false,
      error: new ServiceError(
        401,
        ErrorCode.missingCredentials,
        "The request has no credentials: send 'Authorization: Bearer <API key>'.",
        {},
        UNAUTHORIZED_HEADERS,
      ),
    };
  }
  const match = BEARER.exec(authorization);
  if (!match) {
    return {
      ok: false,
      error: new ServiceError(
        401,
        ErrorCode.missingCredentials,
        "The Authorization header must have the form 'Bearer <API key>' (the scheme in any case, one space, no other whitespace).",
        {},
        UNAUTHORIZED_HEADERS,
      ),
    };
  }
  const config = apiKeysOf(env);
  if (!config.ok) {
    console.error(`Tollgate: ${API_KEYS_VAR} is malformed: ${config.problem}.`);
    return { ok: false, error: new ServiceError(500, ErrorCode.internal, `The gateway's ${API_KEYS_VAR} configuration is malformed: ${config.problem}.`) };
  }
  const presented = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(match[1])));
  let matched: ApiKeyEntry | undefined;
  for (const entry of config.entries) {
    const equal = crypto.subtle.timingSafeEqual(presented, entry.hash);
    if (equal && matched === undefined) matched = entry;
  }
  if (matched === undefined) {
    return { ok: false, error: new ServiceError(401, ErrorCode.invalidCredentials, "The API key is not valid.", {}, UNAUTHORIZED_HEADERS) };
  }
  return { ok: true, accountId: matched.accountId, credentialId: await credentialIdOf(matched.hash) };
}

const CREDENTIAL_ID_CONTEXT = "tollgate credential id v1:";
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * The public id of a configured key (`cr_` and 27 base62 characters), named by the tunnel sessions it
 * opened: stable while the key is configured, derived by hashing its configured hash again with a fixed
 * context, so neither the key nor the hash in TOLLGATE_API_KEYS can be read back from it.
 */
export async function credentialIdOf(keyHash: Uint8Array): Promise<string> {
  const context = new TextEncoder().encode(CREDENTIAL_ID_CONTEXT);
  const input = new Uint8Array(context.length + keyHash.length);
  input.set(context);
  input.set(keyHash, context.length);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", input));
  let value = 0n;
  for (const byte of digest.subarray(0, 20)) value = (value << 8n) | BigInt(byte);
  let body = "";
  for (let i = 0; i < 27; i++) {
    body = BASE62[Number(value % 62n)] + body;
    value /= 62n;
  }
  return `cr_${body}`;
}

/** Middleware: authenticates the request and sets `accountId`, or ends it with the 401. */
export function apiKeyAuth(): MiddlewareHandler<ManagementEnv> {
  return async function apiKeyAuth(c, next) {
    const result = await authenticateApiKey(c.req.header("authorization") ?? null, c.env);
    if (!result.ok) throw result.error;
    c.set("accountId", result.accountId);
    await next();
  };
}

function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/**
 * API key authentication: `Authorization: Bearer <key>` against the SHA-256 hashes configured in
 * `TOLLGATE_API_KEYS` (read by src/settings.ts), compared in constant time. Also used by the tunnels to authenticate agents.
 */

import type { MiddlewareHandler } from "hono";
import type { Env } from "../env.ts";
import { ErrorCode, ServiceError } from "../errors.ts";
import { type ApiKeyEntry, parseApiKeys } from "../api-keys.ts";
import { SettingsError, settingsOf } from "../settings.ts";
import type { ManagementEnv } from "./context.ts";

/** Parsed with the other settings (src/settings.ts); exported here too, where the management tests read it. */
export { parseApiKeys };

/**
 * `Bearer <key>` with the scheme in any ASCII case (RFC 9110: schemes are case-insensitive; some clients
 * send `bearer`), exactly one space and no other whitespace. The gateway's policy rate-limits per
 * Authorization header value (its scheme lower-cased), so whitespace variants, which could be made without
 * end, stay refused.
 */
const BEARER = /^[Bb][Ee][Aa][Rr][Ee][Rr] ([^\s]+)$/;
const UNAUTHORIZED_HEADERS = { "www-authenticate": 'Bearer realm="tollgate"' };

/** The configured keys, or the 500 that names the bad setting (TOLLGATE_API_KEYS or another variable). */
function apiKeysOf(env: Env): { ok: true; entries: readonly ApiKeyEntry[] } | { ok: false; error: ServiceError } {
  try {
    return { ok: true, entries: settingsOf(env).apiKeys };
  } catch (cause) {
    if (!(cause instanceof SettingsError)) throw cause;
    const error = new ServiceError(500, ErrorCode.internal, `The gateway's configuration is malformed: ${cause.issues.join("; ")}.`);
    error.cause = cause;
    return { ok: false, error };
  }
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
      error: new ServiceError(401, ErrorCode.missingCredentials, "The request has no credentials: send 'Authorization: Bearer <API key>'.", {
        headers: UNAUTHORIZED_HEADERS,
      }),
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
        { headers: UNAUTHORIZED_HEADERS },
      ),
    };
  }
  const config = apiKeysOf(env);
  if (!config.ok) return config;
  const presented = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(match[1])));
  let matched: ApiKeyEntry | undefined;
  for (const entry of config.entries) {
    const equal = crypto.subtle.timingSafeEqual(presented, entry.hash);
    if (equal && matched === undefined) matched = entry;
  }
  if (matched === undefined) {
    return { ok: false, error: new ServiceError(401, ErrorCode.invalidCredentials, "The API key is not valid.", { headers: UNAUTHORIZED_HEADERS }) };
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

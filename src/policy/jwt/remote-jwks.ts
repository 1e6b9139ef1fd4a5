/**
 * One JWKS URL of a jwt-validation action: the key set it served, kept for this isolate, fetched again when it
 * expires or when a token names a key it lacks (a rotation), the latter at most once per cooldown, so that
 * tokens with made-up `kid`s cannot make the gateway hammer the issuer. A set that cannot be had fails closed.
 */

import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import { textWithin } from "../../bounded-read.ts";

/** ngrok refreshes its cached JWKS "roughly every 15 minutes"; so does Tollgate. */
export const JWKS_TTL_MS = 15 * 60_000;
/**
 * At most one fetch for unknown `kid`s per URL per this interval, whatever tokens arrive; and after a failed
 * fetch, none for this long either.
 */
export const JWKS_COOLDOWN_MS = 30_000;
/** How long past its TTL a set is still used while the URL cannot be fetched. */
export const JWKS_STALE_GRACE_MS = 60 * 60_000;
export const JWKS_FETCH_TIMEOUT_MS = 5_000;
/** Bytes of a JWKS document; real ones (Auth0, Okta, Google, Entra ID) are 1 to 10 KiB. */
export const MAX_JWKS_BYTES = 64 * 1024;
/** Keys in a JWKS document; real ones hold 2 to 10 (current, next, a few retired). */
export const MAX_JWKS_KEYS = 32;

export type KeySetResult = { readonly ok: true; readonly getKey: JWTVerifyGetKey } | { readonly ok: false; readonly message: string };

export interface RemoteJwksOptions {
  readonly fetch?: typeof fetch;
  readonly now?: () => number;
}

interface Held {
  readonly getKey: JWTVerifyGetKey;
  readonly fetchedAt: number;
}

export class RemoteJwks {
  private held: Held | undefined;
  private lastAttemptAt = Number.NEGATIVE_INFINITY;
  private lastUnknownKeyFetchAt = Number.NEGATIVE_INFINITY;
  private lastFailed = false;
  private lastError = "";
  private pending: Promise<void> | undefined;
  private readonly fetch: typeof fetch;
  private readonly now: () => number;

  constructor(
    readonly url: string,
    { fetch: fetchImpl = (input, init) => fetch(input, init), now = Date.now }: RemoteJwksOptions = {},
  ) {
    this.fetch = fetchImpl;
    this.now = now;
  }

  /** The set to verify with: the one held while fresh, else a new one (or, while the URL fails, a stale one). */
  async current(): Promise<KeySetResult> {
    const now = this.now();
    if (this.held && now - this.held.fetchedAt < JWKS_TTL_MS) return { ok: true, getKey: this.held.getKey };
    if (this.pending || !this.lastFailed || now - this.lastAttemptAt >= JWKS_COOLDOWN_MS) await this.refresh();
    return this.usable();
  }

  /**
   * A newer set for a token whose key the held one lacks (a rotation): fetched if the cooldown allows, else
   * undefined, as it is when the fetch brought nothing new.
   */
  async refreshedForUnknownKey(): Promise<KeySetResult | undefined> {
    const now = this.now();
    if (!this.pending) {
      if (now - this.lastUnknownKeyFetchAt < JWKS_COOLDOWN_MS || (this.lastFailed && now - this.lastAttemptAt < JWKS_COOLDOWN_MS)) return undefined;
      this.lastUnknownKeyFetchAt = now;
    }
    const before = this.held;
    await this.refresh();
    return this.held !== before ? this.usable() : undefined;
  }

  private usable(): KeySetResult {
    const held = this.held;
    if (held && this.now() - held.fetchedAt < JWKS_TTL_MS + JWKS_STALE_GRACE_MS) return { ok: true, getKey: held.getKey };
    return { ok: false, message: `the JWKS at ${this.url} could not be fetched (${this.lastError || "not fetched yet"})` };
  }

  /** One fetch at a time: requests that arrive meanwhile wait for it. */
  private refresh(): Promise<void> {
    this.pending ??= this.fetchOnce().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async fetchOnce(): Promise<void> {
    this.lastAttemptAt = this.now();
    try {
      const document = await this.download();
      this.held = { getKey: createLocalJWKSet(document), fetchedAt: this.now() };
      this.lastError = "";
      this.lastFailed = false;
    } catch (error) {
      this.lastError = error instanceof Error ? error.message : String(error);
      this.lastFailed = true;
    }
  }

  private async download(): Promise<JSONWebKeySet> {
    const response = await this.fetch(this.url, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS) });
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`HTTP ${response.status}`);
    }
    const document: unknown = JSON.parse(await boundedText(response, MAX_JWKS_BYTES));
    const keys = (document as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(keys)) throw new Error("not a JWKS: no keys list");
    if (keys.length > MAX_JWKS_KEYS) throw new Error(`${keys.length} keys, more than the ${MAX_JWKS_KEYS} a JWKS may hold here`);
    return document as JSONWebKeySet;
  }
}

/** The body as text, refusing one past `limit` bytes without reading the rest. */
async function boundedText(response: Response, limit: number): Promise<string> {
  const tooLarge = () => new Error(`larger than ${limit} bytes`);
  if (Number(response.headers.get("content-length") ?? 0) > limit) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (!response.body) return "";
  const text = await textWithin(response.body, limit);
  if (text === undefined) throw tooLarge();
  return text;
}

/**
 * Where a jwt-validation action finds a token, as ngrok's `http.tokens[*]` says: a header (name not case
 * sensitive) or a field of a JSON or form body (POST, PUT or PATCH), with an optional prefix to strip
 * (`Bearer `, compared without regard to case as RFC 6750's scheme is).
 */

import type { Exchange } from "../exchange.ts";
import { type BusyRead, RequestBody } from "../request-body.ts";

export interface TokenLocation {
  readonly method: "header" | "body";
  readonly name: string;
  readonly prefix?: string;
}

/** `busy`: the token's body was not read, for want of the isolate's body budget (answered 503, not 401). */
export type Located = { readonly ok: true; readonly token: string } | { readonly ok: false; readonly reason: string; readonly busy?: BusyRead };

const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);
const NO_BODY = new RequestBody(null);

export async function locateToken(exchange: Exchange, location: TokenLocation): Promise<Located> {
  const raw = location.method === "header" ? exchange.request.headers.get(location.name) : await bodyField(exchange, location.name);
  const where = `the ${location.method === "header" ? "header" : "body field"} ${location.name}`;
  if (typeof raw === "object" && raw !== null) return { ok: false, reason: `${where} could not be read: ${raw.message}`, busy: raw };
  if (raw === null || raw === undefined) return { ok: false, reason: `${where} is missing` };
  const prefix = location.prefix ?? "";
  if (raw.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase()) return { ok: false, reason: `${where} does not start with '${prefix}'` };
  const token = raw.slice(prefix.length).trim();
  return token === "" ? { ok: false, reason: `${where} holds no token` } : { ok: true, token };
}

/** The field as a string, or null when the request has no such field (or no body it may read), or the read refused. */
async function bodyField(exchange: Exchange, name: string): Promise<string | null | BusyRead> {
  if (!BODY_METHODS.has(exchange.request.method.toUpperCase())) return null;
  const read = await (exchange.request.body ?? NO_BODY).read();
  if (!read.ok && read.busy) return read;
  if (!read.ok) return null;
  const text = new TextDecoder().decode(read.bytes);
  const type = (exchange.request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (type === "application/x-www-form-urlencoded") return new URLSearchParams(text).get(name);
  if (type !== "application/json") return null;
  try {
    const document: unknown = JSON.parse(text);
    if (document === null || typeof document !== "object" || Array.isArray(document)) return null;
    const value = (document as Record<string, unknown>)[name];
    return typeof value === "string" ? value : null;
  } catch {
    return null;
  }
}

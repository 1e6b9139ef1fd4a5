/** Calls the management API through the whole gateway (SELF), as a client would. */

import { SELF } from "cloudflare:test";
import { expect } from "vitest";
import { TEST_KEYS, type TestKeyName } from "./keys.ts";

export const ORIGIN = "http://127.0.0.1";

export interface CallOptions {
  /** Key to authenticate with (default `dev`); null sends no Authorization header. */
  key?: TestKeyName | null;
  /** Service-Version value (default "2"); null leaves the header out. */
  version?: string | null;
  /** Sent as JSON with `Content-Type: application/json`. */
  json?: unknown;
  /** Sent as is (a string gets fetch's `text/plain` Content-Type unless `headers` has one; a Blob without type gets none). */
  body?: string | Blob;
  headers?: Record<string, string>;
}

export function call(method: string, path: string, options: CallOptions = {}): Promise<Response> {
  const headers = new Headers(options.headers);
  const key = options.key === undefined ? "dev" : options.key;
  if (key !== null) headers.set("authorization", `Bearer ${TEST_KEYS[key].key}`);
  const version = options.version === undefined ? "2" : options.version;
  if (version !== null) headers.set("service-version", version);
  let body: string | Blob | undefined = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers.set("content-type", "application/json");
  }
  return SELF.fetch(path.startsWith("http") ? path : `${ORIGIN}${path}`, { method, headers, body });
}

/** Calls, expects `status`, and returns the parsed JSON body. */
export async function callJson<T = Record<string, unknown>>(method: string, path: string, status: number, options: CallOptions = {}): Promise<T> {
  const response = await call(method, path, options);
  const text = await response.text();
  expect(response.status, `${method} ${path} → ${response.status} ${text}`).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return JSON.parse(text) as T;
}

export interface Envelope {
  error_code: string;
  status_code: number;
  msg: string;
  details: Record<string, unknown> & { operation_id: string };
}

export const OPERATION_ID = /^op_[0-9A-Za-z]{27}$/;

/** Asserts the error envelope (status, `ERR_SVC_<code>`, operation id in body and header) and returns it. */
export async function expectError(response: Response, status: number, code: number, msg?: RegExp | string): Promise<Envelope> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const envelope = JSON.parse(text) as Envelope;
  expect(envelope).toMatchObject({ error_code: `ERR_SVC_${code}`, status_code: status });
  expect(typeof envelope.msg).toBe("string");
  expect(envelope.details.operation_id).toMatch(OPERATION_ID);
  expect(response.headers.get("x-operation-id")).toBe(envelope.details.operation_id);
  if (msg !== undefined) expect(envelope.msg).toMatch(msg);
  return envelope;
}

/** `call` then {@link expectError}. */
export async function callError(
  method: string,
  path: string,
  status: number,
  code: number,
  options: CallOptions = {},
  msg?: RegExp | string,
): Promise<Envelope> {
  return expectError(await call(method, path, options), status, code, msg);
}

export interface BotUser {
  id: string;
  uri: string;
  name: string;
  active: boolean;
  created_at: string;
}

export interface BotUserList {
  bot_users: BotUser[];
  uri: string;
  next_page_uri: string | null;
}

/** The two paths of the one store of service users: ngrok's current name, and its former one. */
export type UsersPath = "/service_users" | "/bot_users";

/** A service user created through `path` (either serves the same store). */
export function createUser(path: UsersPath, name: string, key: TestKeyName = "dev", active?: boolean): Promise<BotUser> {
  return callJson<BotUser>("POST", path, 201, { key, json: active === undefined ? { name } : { name, active } });
}

export function createBotUser(name: string, key: TestKeyName = "dev", active?: boolean): Promise<BotUser> {
  return createUser("/bot_users", name, key, active);
}

export const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

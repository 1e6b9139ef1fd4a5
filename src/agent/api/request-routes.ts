/**
 * /api/requests/http: captured requests — list (newest first), detail, replay, delete all — in the shapes
 * of ngrok's agent API, and `/api/requests/http/events`, the live feed of the inspector (server-sent events).
 */

import type { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import type { CaptureStore } from "../capture/capture-store.ts";
import type { CapturedExchange } from "../capture/captured-exchange.ts";
import { subscribeChanges } from "../capture/change-feed.ts";
import { captureSummary, captureView } from "../capture/view.ts";
import type { LocalTunnel } from "../edge/local-forwarder.ts";
import { sendToLocal, type LocalAnswer, type LocalRequest } from "../edge/replay.ts";
import { AgentApiError, AgentErrorCode, notFound } from "./errors.ts";
import { readJsonBody } from "./json-body.ts";

export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 1000;
/** Summaries the live feed starts with. */
const SNAPSHOT_LIMIT = 1000;
/** A replay answers 204 when the local service has answered, or after this long (it goes on, and is captured). */
const REPLAY_WAIT_MS = 5000;
const KEEP_ALIVE_MS = 15_000;

export interface RequestRoutesOptions {
  readonly capture: CaptureStore;
  readonly tunnels: { get(name: string): LocalTunnel | undefined };
  /** How a replay reaches the local service (tests may swap it). */
  readonly send?: (tunnel: LocalTunnel, request: LocalRequest) => Promise<LocalAnswer>;
  /** Batching of the live feed. */
  readonly feedIntervalMs?: number;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const headerValue = z.string().refine((value) => !/[\r\n\0]/.test(value), "a header value cannot contain CR, LF or NUL");
const headerValues = z.union([headerValue, z.array(headerValue)], { error: "must be a string or a list of strings" });

/**
 * Header name → a value or a list of values, read as a list of pairs. Not z.record: it builds a plain
 * object, which drops a header named `__proto__`; every own key of the parsed JSON is a header here.
 */
const headersSchema = z
  .custom<object>(
    (value) => typeof value === "object" && value !== null && !Array.isArray(value),
    "must be a map of header names to a value or a list of values",
  )
  .transform((map, ctx) => {
    const headers: Array<[string, string]> = [];
    for (const [name, given] of Object.entries(map)) {
      if (!TOKEN.test(name)) {
        ctx.addIssue({ code: "custom", message: "header names are HTTP tokens", path: [name] });
        continue;
      }
      const values = headerValues.safeParse(given);
      if (!values.success) {
        for (const issue of values.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: [name, ...issue.path] });
        continue;
      }
      for (const value of Array.isArray(values.data) ? values.data : [values.data]) headers.push([name, value]);
    }
    return headers;
  });

/** Replay with modifications: what replaces the captured request's parts. */
const modificationSchema = z.strictObject({
  method: z.string().regex(TOKEN, "must be an HTTP method token").optional(),
  uri: z
    .string()
    .regex(/^\/[^\s]*$/, "must be a path (and query) starting with /, without spaces")
    .optional(),
  headers: headersSchema.optional(),
  body: z.string().optional(),
  body_base64: z.base64("must be base64").optional(),
});

const replaySchema = z.strictObject({
  id: z.string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") }).min(1, "is required"),
  tunnel_name: z.string().optional(),
  /** The published ngrok client's replayRequest sends this spelling. */
  tunnelName: z.string().optional(),
  request: modificationSchema.optional(),
});

type Modification = z.output<typeof modificationSchema>;

function parseLimit(value: string | undefined): number {
  if (value === undefined || value === "") return DEFAULT_LIST_LIMIT;
  const limit = /^\d{1,7}$/.test(value) ? Number(value) : NaN;
  if (!(limit >= 1 && limit <= MAX_LIST_LIMIT)) {
    throw new AgentApiError(400, AgentErrorCode.badRequest, `limit must be a whole number from 1 to ${MAX_LIST_LIMIT}`, `got limit=${JSON.stringify(value)}`);
  }
  return limit;
}

/** The request a replay sends: the captured one, with any modifications, and a Content-Length that fits its body. */
export function replayRequest(exchange: CapturedExchange, change: Modification = {}): LocalRequest {
  const body =
    change.body_base64 !== undefined
      ? Buffer.from(change.body_base64, "base64")
      : change.body !== undefined
        ? Buffer.from(change.body, "utf8")
        : exchange.request.body.bytes();
  const given = change.headers ?? exchange.request.headers.list();
  const hadLength = given.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name));
  const headers = given.filter(([name]) => !/^(content-length|transfer-encoding)$/i.test(name));
  if (body.byteLength > 0 || hadLength) headers.push(["content-length", String(body.byteLength)]);
  return { method: change.method ?? exchange.request.method, target: change.uri ?? exchange.request.target, headers, body, remoteAddr: exchange.remoteAddr };
}

/** Mounts the routes on the agent API (pass to `createAgentApi`'s `mounts`). */
export function requestRoutes(options: RequestRoutesOptions): (app: Hono) => void {
  const { capture, tunnels } = options;
  const send = options.send ?? sendToLocal;
  const base = "/api/requests/http";

  return (app) => {
    app.get(base, (c) => {
      const limit = parseLimit(c.req.query("limit"));
      const tunnelName = c.req.query("tunnel_name") || undefined;
      return c.json({ uri: base, requests: capture.list({ limit, tunnelName }).map(captureView) });
    });

    app.post(base, async (c) => {
      const body = await readJsonBody(c.req.raw, AgentErrorCode.badRequest, "invalid replay request");
      const parsed = replaySchema.safeParse(body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const detail = issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
        throw new AgentApiError(400, AgentErrorCode.badRequest, `invalid replay request: ${detail}`, detail);
      }
      const { id, request: change } = parsed.data;
      const exchange = capture.get(id);
      if (!exchange) throw notFound(`captured request '${id}'`);
      const tunnelName = parsed.data.tunnel_name ?? parsed.data.tunnelName ?? exchange.tunnelName;
      const tunnel = tunnels.get(tunnelName);
      if (!tunnel) throw notFound(`tunnel '${tunnelName}'`);
      const replay = capture.replaying(id, () => send(tunnel, replayRequest(exchange, change)));
      replay.catch((error: unknown) => console.error("tollgate agent: a replay failed:", error));
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([replay, new Promise((resolve) => (timer = setTimeout(resolve, REPLAY_WAIT_MS)))]);
      clearTimeout(timer);
      return c.body(null, 204);
    });

    app.delete(base, (c) => {
      capture.clear();
      return c.body(null, 204);
    });

    app.all(base, () => {
      throw new AgentApiError(405, AgentErrorCode.methodNotAllowed, "method not allowed here; use GET, POST or DELETE");
    });

    app.get(`${base}/events`, (c) =>
      streamSSE(c, async (stream) => {
        const snapshot = capture.list({ limit: SNAPSHOT_LIMIT }).map(captureSummary);
        let stop!: () => void;
        const stopped = new Promise<void>((resolve) => (stop = resolve));
        const unsubscribe = subscribeChanges(capture, (batch) => stream.writeSSE({ event: "changes", data: JSON.stringify(batch) }), {
          intervalMs: options.feedIntervalMs,
        });
        const keepAlive = setInterval(() => void stream.write(": keep-alive\n\n"), KEEP_ALIVE_MS);
        const done = () => {
          unsubscribe();
          clearInterval(keepAlive);
          stop();
        };
        stream.onAbort(done);
        c.req.raw.signal.addEventListener("abort", done, { once: true });
        await stream.writeSSE({ event: "snapshot", data: JSON.stringify({ requests: snapshot }), retry: 1000 });
        await stopped;
      }),
    );

    app.get(`${base}/:id`, (c) => {
      const exchange = capture.get(c.req.param("id"));
      if (!exchange) throw notFound(`captured request '${c.req.param("id")}'`);
      return c.json(captureView(exchange));
    });

    app.all(`${base}/:id`, () => {
      throw new AgentApiError(405, AgentErrorCode.methodNotAllowed, "method not allowed here; use GET");
    });
  };
}

/**
 * `add-headers` and `remove-headers`: change request headers inbound, response headers outbound. As ngrok's,
 * add-headers values may interpolate `${…}` (checked at load; see interpolated-fields.ts), and each action
 * names 1 to 10 headers; remove-headers names are plain text (ngrok interpolates none).
 */

import { headersChanged } from "../cel-activation.ts";
import { z } from "zod";
import type { Exchange, Phase } from "../exchange.ts";
import { type ActionContext, defineAction, isHeaderName } from "./action.ts";
import { headerSafe, headerValueSchema, MAX_INTERPOLATED_HEADER_CHARS } from "./header-text.ts";
import { compileFields, FieldRun } from "./interpolated-fields.ts";

/** Headers one add-headers or remove-headers action names (ngrok's maximum). */
export const MAX_HEADERS_PER_ACTION = 10;

const headerName = z.string({ error: "must be a string" }).refine(isHeaderName, "is not a valid header name");

function targetHeaders(exchange: Exchange, phase: Phase): Headers | undefined {
  return phase === "inbound" ? exchange.request.headers : exchange.response?.headers;
}

export const addHeadersConfig = z.strictObject({
  headers: z
    .record(headerName, headerValueSchema)
    .refine((headers) => Object.keys(headers).length > 0, "must name at least 1 header")
    .refine((headers) => Object.keys(headers).length <= MAX_HEADERS_PER_ACTION, `exceeds the limit of ${MAX_HEADERS_PER_ACTION} headers`)
    .describe("Header names to values; values may interpolate ${expression}."),
});

const addHeadersFields = (config: z.output<typeof addHeadersConfig>, context: ActionContext) =>
  compileFields(
    Object.entries(config.headers).map(([name, value]) => [["headers", name], value] as const),
    context,
  );

export const addHeadersAction = defineAction({
  type: "add-headers",
  config: addHeadersConfig,
  configOptional: false,
  compile(config, context) {
    const host = Object.keys(config.headers).find((name) => name.toLowerCase() === "host");
    if (host !== undefined && context.phase === "inbound" && context.origin === "operator") {
      return {
        path: ["headers", host],
        message:
          "cannot set the Host a route's upstream receives: Workers sends the host of the upstream URL and fetch cannot change it. " +
          "Point the route's upstream at that host instead (upstream: http://localhost:8080); a tunnel's policy may set host",
      };
    }
    const compiled = addHeadersFields(config, context);
    if (!compiled.ok) return { path: compiled.path, message: compiled.message };
    const { phase } = context;
    const fields = compiled.fields.map((field) => [String(field.path[1]), field] as const);
    return {
      type: "add-headers",
      run(exchange, services) {
        const headers = targetHeaders(exchange, phase);
        if (!headers) return undefined;
        const run = new FieldRun(exchange, services);
        // Every value is rendered before any is added: an expression reads the headers as they were.
        const values = fields.map(([name, field]) => [name, headerSafe(run.render(field, MAX_INTERPOLATED_HEADER_CHARS))] as const);
        // As on ngrok, host replaces the value rather than adding a second one.
        for (const [name, value] of values) {
          if (name.toLowerCase() === "host") headers.set(name, value);
          else headers.append(name, value);
        }
        headersChanged(headers);
        return undefined;
      },
    };
  },
});

export const removeHeadersConfig = z.strictObject({
  headers: z.array(headerName).min(1, "must name at least 1 header").max(MAX_HEADERS_PER_ACTION, `exceeds the limit of ${MAX_HEADERS_PER_ACTION} headers`),
});

export const removeHeadersAction = defineAction({
  type: "remove-headers",
  config: removeHeadersConfig,
  configOptional: false,
  compile(config, { phase }) {
    return {
      type: "remove-headers",
      run(exchange) {
        const headers = targetHeaders(exchange, phase);
        if (!headers) return undefined;
        for (const name of config.headers) headers.delete(name);
        headersChanged(headers);
        return undefined;
      },
    };
  },
});

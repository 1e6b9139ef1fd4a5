/**
 * `custom-response`: answers with a configured status, body and headers. As ngrok's, the body and the header
 * values may interpolate `${…}` (checked at load); the status is a number. An interpolated body is cut at
 * MAX_CUSTOM_RESPONSE_BODY_CHARS, the limit a written body has; header values as add-headers' are.
 */

import { z } from "zod";
import { defineAction, isHeaderName, type ActionContext } from "./action.ts";
import { headerSafe, headerValueSchema, MAX_INTERPOLATED_HEADER_CHARS } from "./header-text.ts";
import { compileFields, FieldRun } from "./interpolated-fields.ts";

/** Statuses a Response cannot carry a body with (the constructor throws). */
const NULL_BODY_STATUSES = [204, 205, 304];

/** Characters of a body, as written and after interpolation. */
export const MAX_CUSTOM_RESPONSE_BODY_CHARS = 1_000_000;
/** Headers of one custom response (ngrok's maximum). */
export const MAX_CUSTOM_RESPONSE_HEADERS = 10;

export const customResponseConfig = z
  .strictObject({
    status_code: z
      .number({ error: "must be an integer" })
      .int("must be an integer")
      .min(200, "must be at least 200")
      .max(599, "must be at most 599")
      .default(200),
    body: z
      .string({ error: "must be a string" })
      .max(MAX_CUSTOM_RESPONSE_BODY_CHARS, `must be at most ${MAX_CUSTOM_RESPONSE_BODY_CHARS} characters`)
      .optional()
      .describe("The body; may interpolate ${expression}."),
    headers: z
      .record(z.string().refine(isHeaderName, "is not a valid header name"), headerValueSchema)
      .refine((headers) => Object.keys(headers).length <= MAX_CUSTOM_RESPONSE_HEADERS, `exceeds the limit of ${MAX_CUSTOM_RESPONSE_HEADERS} headers`)
      .optional()
      .describe("Header names to values; values may interpolate ${expression}."),
  })
  .refine((config) => config.body === undefined || !NULL_BODY_STATUSES.includes(config.status_code), {
    path: ["body"],
    message: `must be absent when status_code is ${NULL_BODY_STATUSES.join(", ")}`,
  });

type Config = z.output<typeof customResponseConfig>;

const customResponseFields = (config: Config, context: ActionContext) =>
  compileFields(
    [
      ...(config.body === undefined ? [] : [[["body"], config.body] as const]),
      ...Object.entries(config.headers ?? {}).map(([name, value]) => [["headers", name], value] as const),
    ],
    context,
  );

export const customResponseAction = defineAction({
  type: "custom-response",
  config: customResponseConfig,
  configOptional: false,
  compile(config, context) {
    const compiled = customResponseFields(config, context);
    if (!compiled.ok) return { path: compiled.path, message: compiled.message };
    const body = compiled.fields.find((field) => field.path[0] === "body");
    const headers = compiled.fields.filter((field) => field.path[0] === "headers").map((field) => [String(field.path[1]), field] as const);
    const hasContentType = headers.some(([name]) => name.toLowerCase() === "content-type");
    return {
      type: "custom-response",
      run(exchange, services) {
        const run = new FieldRun(exchange, services);
        const text = body && run.render(body, MAX_CUSTOM_RESPONSE_BODY_CHARS);
        const response = new Response(text ?? null, { status: config.status_code });
        if (text !== undefined && !hasContentType) response.headers.set("content-type", "text/plain; charset=utf-8");
        for (const [name, field] of headers) response.headers.set(name, headerSafe(run.render(field, MAX_INTERPOLATED_HEADER_CHARS)));
        return response;
      },
    };
  },
});

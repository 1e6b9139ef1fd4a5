/** `custom-response`: answers with a configured status, body and headers. */

import { z } from "zod";
import { defineAction, HEADER_VALUE_MESSAGE, isHeaderName, isHeaderValue } from "./action.ts";

/** Statuses a Response cannot carry a body with (the constructor throws). */
const NULL_BODY_STATUSES = [204, 205, 304];

export const customResponseConfig = z
  .strictObject({
    status_code: z
      .number({ error: "must be an integer" })
      .int("must be an integer")
      .min(200, "must be at least 200")
      .max(599, "must be at most 599")
      .default(200),
    body: z.string({ error: "must be a string" }).max(1_000_000, "must be at most 1000000 characters").optional(),
    headers: z
      .record(
        z.string().refine(isHeaderName, "is not a valid header name"),
        z.string({ error: "must be a string" }).refine(isHeaderValue, HEADER_VALUE_MESSAGE),
      )
      .optional(),
  })
  .refine((config) => config.body === undefined || !NULL_BODY_STATUSES.includes(config.status_code), {
    path: ["body"],
    message: `must be absent when status_code is ${NULL_BODY_STATUSES.join(", ")}`,
  });

export const customResponseAction = defineAction({
  type: "custom-response",
  config: customResponseConfig,
  configOptional: false,
  compile(config) {
    const headers = Object.entries(config.headers ?? {});
    const hasContentType = headers.some(([name]) => name.toLowerCase() === "content-type");
    return {
      type: "custom-response",
      run() {
        const response = new Response(config.body ?? null, { status: config.status_code });
        if (config.body !== undefined && !hasContentType) response.headers.set("content-type", "text/plain; charset=utf-8");
        for (const [name, value] of headers) response.headers.set(name, value);
        return response;
      },
    };
  },
});

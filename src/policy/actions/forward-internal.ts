/**
 * `forward-internal`: sends the request to another route or tunnel of the same owner, named by an internal URL
 * (`https://api.internal`), through that target's own traffic policy; its answer becomes this target's upstream
 * response. What a URL names and what of ngrok's internal endpoints is left out: docs/policies.md#forward-internal.
 */

import { z } from "zod";
import { internalTargetNotFound } from "../forward-chain.ts";
import { parseInternalUrl } from "../internal-url.ts";
import { defineAction } from "./action.ts";

export const forwardInternalConfig = z.strictObject({
  url: z
    .string({ error: "must be a string" })
    // The length first (MAX_INTERNAL_URL_CHARS), then the URL: one message however long the text.
    .superRefine((text, ctx) => {
      const parsed = parseInternalUrl(text);
      if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.message });
    })
    .describe("The internal endpoint to forward to, e.g. https://api.internal: a route's .internal host name, or a tunnel of the same account."),
  binding: z
    .literal("internal", { error: "must be 'internal': only internal endpoints can be forwarded to" })
    .optional()
    .describe("ngrok's endpoint binding; only 'internal', the default."),
  on_error: z
    .enum(["halt", "continue"], { error: "must be 'halt' or 'continue'" })
    .default("halt")
    .describe("halt (default): a forward that fails answers with its error; continue: the next actions run."),
});

export const forwardInternalAction = defineAction({
  type: "forward-internal",
  config: forwardInternalConfig,
  configOptional: false,
  simulation: { skip: () => "forward-internal sends the request to another endpoint: not simulated" },
  compile(config, { phase }) {
    if (phase !== "inbound") return { path: [], message: "forward-internal runs on requests only (inbound / on_http_request)" };
    // Checked by the schema; parsed once here, not per request.
    const parsed = parseInternalUrl(config.url);
    if (!parsed.ok) throw new Error(`forward-internal: ${parsed.message}`);
    const url = parsed.url;
    const halt = config.on_error === "halt";
    return {
      type: "forward-internal",
      async run(exchange) {
        // Where nothing may be forwarded to (the agent endpoint, a tool running a policy), every target is missing.
        const result = exchange.forwardInternal ? await exchange.forwardInternal(url) : { ok: false, response: internalTargetNotFound(url).toResponse() };
        if (result.ok || halt) return result.response;
        await result.response.body?.cancel();
        return undefined;
      },
    };
  },
});

/** `add-headers` and `remove-headers`: change request headers inbound, response headers outbound. */

import { headersChanged } from "../cel-activation.ts";
import { z } from "zod";
import type { Exchange, Phase } from "../exchange.ts";
import { defineAction, HEADER_VALUE_MESSAGE, isHeaderName, isHeaderValue } from "./action.ts";

const headerName = z.string({ error: "must be a string" }).refine(isHeaderName, "is not a valid header name");
const headerValue = z.string({ error: "must be a string" }).refine(isHeaderValue, HEADER_VALUE_MESSAGE);

function targetHeaders(exchange: Exchange, phase: Phase): Headers | undefined {
  return phase === "inbound" ? exchange.request.headers : exchange.response?.headers;
}

export const addHeadersConfig = z.strictObject({
  headers: z.record(headerName, headerValue).refine((headers) => Object.keys(headers).length > 0, "must name at least 1 header"),
});

export const addHeadersAction = defineAction({
  type: "add-headers",
  config: addHeadersConfig,
  configOptional: false,
  compile(config, { phase }) {
    const entries = Object.entries(config.headers);
    return {
      type: "add-headers",
      run(exchange) {
        const headers = targetHeaders(exchange, phase);
        if (!headers) return undefined;
        for (const [name, value] of entries) headers.append(name, value);
        headersChanged(headers);
        return undefined;
      },
    };
  },
});

export const removeHeadersConfig = z.strictObject({
  headers: z.array(headerName).min(1, "must name at least 1 header"),
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

/** `deny`: ends the request with an error status (403 unless configured). */

import { z } from "zod";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { defineAction } from "./action.ts";

export const denyConfig = z.strictObject({
  status_code: z
    .number({ error: "must be an integer" })
    .int("must be an integer")
    .min(400, "must be at least 400")
    .max(599, "must be at most 599")
    .default(403)
    .describe("HTTP status of the answer; default 403."),
});

export const denyAction = defineAction({
  type: "deny",
  config: denyConfig,
  configOptional: true,
  compile(config, context) {
    return {
      type: "deny",
      run: () =>
        new ServiceError(config.status_code, ErrorCode.denied, "The request was denied by the traffic policy.", {
          details: {
            action: context.position,
          },
        }).toResponse(),
    };
  },
});

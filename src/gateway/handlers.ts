/** The built-in upstreams the pipeline can dispatch to. */

import { handleManagement } from "../management/app.ts";
import type { UpstreamHandlers } from "./upstream.ts";

export const upstreamHandlers: UpstreamHandlers = {
  management: handleManagement,
};

/** The built-in upstreams the pipeline can dispatch to. */

import { handleManagement } from "../management/app.ts";
import { routeModules } from "./modules/route-modules.ts";
import type { UpstreamHandlers } from "./upstream.ts";

export const upstreamHandlers: UpstreamHandlers = {
  management: handleManagement,
  routeModules,
};

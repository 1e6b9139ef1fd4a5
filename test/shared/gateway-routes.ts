/** The routes of the committed policies/gateway.yaml, in config order: what `/edges/https` must list. */
export const GATEWAY_ROUTES: ReadonlyArray<readonly [id: string, match: string]> = [
  ["edghtsrt_demo", "/demo"],
  ["edghtsrt_limits", "/limits"],
  ["edghtsrt_llm", "/llm"],
  ["edghtsrt_global_limits", "/global-limits"],
  ["edghtsrt_jwt_demo", "/jwt-demo"],
  ["edghtsrt_api", "/"],
];

/** Where the management route (`edghtsrt_api`, the catch-all, last) sits in that list. */
export const API_ROUTE_INDEX = GATEWAY_ROUTES.length - 1;

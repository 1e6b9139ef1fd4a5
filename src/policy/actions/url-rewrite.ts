/**
 * `url-rewrite` (as ngrok's): the URL the upstream receives, with every match of `from` replaced by `to`; the
 * client's URL is unchanged. Expressions and actions after it read the rewritten `req.url`. Only the path and
 * query may change: a rewrite that names another scheme, host or port is not applied (the upstream of a route
 * or tunnel is fixed) and says why in `actions.svc.url_rewrite.error`. Never ends the request.
 */

import { z } from "zod";
import { type ActionContext, defineAction } from "./action.ts";
import { compileReplacement, fromSchema, resolveReplaced, toSchema, type UrlReplacementVars, urlReplacementResults } from "./url-replacement.ts";

export const urlRewriteConfig = z.strictObject({ from: fromSchema, to: toSchema });

type Config = z.output<typeof urlRewriteConfig>;

export const URL_REWRITE_ORIGIN_ERROR = "ERR_URL_REWRITE_ORIGIN";

const replacementOf = (config: Config, context: ActionContext) => compileReplacement(config.from, config.to, context);

declare module "./results.ts" {
  interface ActionVars {
    url_rewrite: UrlReplacementVars;
  }
}

export const urlRewriteAction = defineAction({
  type: "url-rewrite",
  config: urlRewriteConfig,
  configOptional: false,
  results: urlReplacementResults("url_rewrite"),
  compile(config, context) {
    if (context.phase !== "inbound") return { path: [], message: "runs only on requests (inbound, ngrok's on_http_request), as ngrok's does" };
    const compiled = replacementOf(config, context);
    if (!compiled.ok) return { path: compiled.path, message: compiled.message };
    const { replacement } = compiled;
    return {
      type: "url-rewrite",
      run(exchange, services) {
        const vars = exchange.vars.url_rewrite;
        const url = exchange.request.url;
        const outcome = replacement.apply(exchange, services, url.href);
        if (!outcome.ok) {
          vars.error = { code: outcome.code, message: outcome.message };
          return undefined;
        }
        vars.matches = [...outcome.matches];
        const rewritten = outcome.replaced ? resolveReplaced(outcome.text, url) : url;
        if (!rewritten || rewritten.origin !== url.origin) {
          vars.error = {
            code: URL_REWRITE_ORIGIN_ERROR,
            message: "The rewritten URL names another scheme, host or port; url-rewrite may change only the path and query.",
          };
          return undefined;
        }
        url.pathname = rewritten.pathname;
        url.search = rewritten.search;
        vars.url = url.href;
        vars.error = { code: "", message: "" };
        return undefined;
      },
    };
  },
});

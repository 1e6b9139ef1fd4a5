/**
 * wrangler.toml's production environment against its top level: wrangler does not inherit vars, Durable Object
 * bindings or Analytics Engine datasets into an environment, so a binding added at the top level only would be
 * missing from the deployed Worker alone (docs/deploying.md).
 */

import { describe, expect, it } from "vitest";
import { unstable_readConfig, type Unstable_Config } from "wrangler";

const topLevel = unstable_readConfig({ config: "wrangler.toml", env: "" }, { hideWarnings: true });
const production = unstable_readConfig({ config: "wrangler.toml", env: "production" }, { hideWarnings: true });

const bindings = (config: Unstable_Config) =>
  config.durable_objects.bindings.map(({ name, class_name }: { name: string; class_name: string }) => `${name} → ${class_name}`).sort();
const routePatterns = (config: Unstable_Config) =>
  (config.routes ?? []).map((route: string | { pattern: string }) => (typeof route === "string" ? route : route.pattern));

describe("wrangler.toml's production environment", () => {
  it("binds every Durable Object class the top level binds, under the same names", () => {
    expect(bindings(production)).toEqual(bindings(topLevel));
  });

  it("sets every variable the top level sets", () => {
    expect(Object.keys(production.vars).sort()).toEqual(Object.keys(topLevel.vars).sort());
  });

  it("binds the rate-limit analytics dataset", () => {
    expect(production.analytics_engine_datasets.map((dataset: { binding: string }) => dataset.binding)).toContain("RATE_LIMIT_ANALYTICS");
  });

  it("routes the tunnel domain's wildcard to the Worker and is not served on workers.dev", () => {
    const domain = production.vars.TUNNEL_DOMAIN;
    expect(typeof domain === "string" && domain !== "" && domain !== "localhost").toBe(true);
    expect(routePatterns(production)).toContain(`*.${domain}/*`);
    expect(production.workers_dev).toBe(false);
  });

  it("inherits the Durable Object migrations of the top level", () => {
    expect(production.migrations).toEqual(topLevel.migrations);
  });
});

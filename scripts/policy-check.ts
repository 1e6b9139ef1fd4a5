/**
 * `npm run policy:check [dir] [--quiet]`: validates policies/ as the gateway will load it; exits 1 with every
 * issue. The build (wrangler.toml's [build] command) runs it first, so a broken policy is never deployed.
 */

import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { existsSync } from "node:fs";
import { unstable_readConfig } from "wrangler";
import { loadGatewayConfig } from "../src/gateway/gateway-config.ts";
import { normalizeDomain } from "../src/domain.ts";
import { formatIssue } from "../src/policy/issues.ts";
import { readPolicyFiles } from "./policy-files.mjs";

export interface Output {
  log(line: string): void;
  error(line: string): void;
}

/** Checks the policies/ directory under `root`; returns the process exit code. */
export function policyCheck(root: string, out: Output = console): number {
  let files: Record<string, string>;
  try {
    files = readPolicyFiles(root);
  } catch (error) {
    out.error(`cannot read ${resolve(root, "policies")}: ${(error as Error).message}`);
    return 2;
  }
  const tunnelDomain = tunnelDomainOf(root);
  const result = loadGatewayConfig(files, { tunnelDomain });
  if (!result.ok) {
    for (const issue of result.issues) out.error(formatIssue(issue));
    out.error(`${result.issues.length} problem${result.issues.length === 1 ? "" : "s"} in policies/`);
    return 1;
  }
  const routes = result.config.edges.reduce((sum, edge) => sum + edge.routes.length, 0);
  out.log(
    `policies/ OK: ${Object.keys(files).length} files, ${result.config.edges.length} edge${result.config.edges.length === 1 ? "" : "s"}, ${routes} route${routes === 1 ? "" : "s"}`,
  );
  return 0;
}

/** TUNNEL_DOMAIN from the [vars] of wrangler.toml under `root`, as the deployed Worker sees it ("" without one). */
function tunnelDomainOf(root: string): string {
  const configPath = resolve(root, "wrangler.toml");
  if (!existsSync(configPath)) return "";
  const config = unstable_readConfig({ config: configPath }, { hideWarnings: true });
  const domain = (config.vars as Record<string, unknown>).TUNNEL_DOMAIN;
  return normalizeDomain(typeof domain === "string" ? domain : undefined);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  // --quiet: only problems are printed (the build runs it on every change under policies/)
  const out: Output = args.includes("--quiet") ? { log: () => {}, error: (line) => console.error(line) } : console;
  process.exitCode = policyCheck(resolve(args.find((arg) => !arg.startsWith("--")) ?? "."), out);
}

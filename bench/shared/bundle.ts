/**
 * Bundles a Worker the way `wrangler deploy --dry-run --outdir` does (esbuild, ESM, es2024,
 * workerd conditions, cloudflare:* external, keepNames as the Worker's wrangler config says: wrangler's
 * default is on), optionally replacing the bundled policy files (src/generated/policy-files.ts) with the
 * bench's own.
 */

import { build, type Plugin } from "esbuild";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { unstable_readConfig } from "wrangler";

const GENERATED_POLICIES = /(^|[\\/])generated[\\/]policy-files(\.ts)?$/;

/** Resolves the import of src/generated/policy-files.ts to a module holding `files` instead. */
function policyFilesPlugin(files: Readonly<Record<string, string>>): Plugin {
  return {
    name: "bench-policy-files",
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: GENERATED_POLICIES }, (args) => ({ path: args.path, namespace: "bench-policy-files" }));
      pluginBuild.onLoad({ filter: /.*/, namespace: "bench-policy-files" }, () => ({
        contents: `export const policyFiles = ${JSON.stringify(files)};\n`,
        loader: "ts",
      }));
    },
  };
}

export interface BundleOptions {
  /** Entry module (a Worker with a default export). */
  readonly entry: string;
  /** Directory the bundle is written to, as `<outdir>/worker.js`. */
  readonly outdir: string;
  /** Replaces the generated policy files of the gateway. */
  readonly policyFiles?: Readonly<Record<string, string>>;
}

/** The Worker's wrangler config: next to its entry module, else one directory up (src/worker.ts → wrangler.toml). */
function wranglerConfigOf(entry: string): string | undefined {
  return [join(dirname(entry), "wrangler.toml"), join(dirname(entry), "..", "wrangler.toml")].find((path) => existsSync(path));
}

/** `keep_names` of the Worker's wrangler config; wrangler bundles with esbuild's keepNames unless it says false. */
function keepNamesOf(entry: string): boolean {
  const config = wranglerConfigOf(entry);
  return config ? (unstable_readConfig({ config }, { hideWarnings: true }).keep_names ?? true) : true;
}

/** Writes the bundle and returns the path of its one module. */
export async function bundleWorker({ entry, outdir, policyFiles }: BundleOptions): Promise<string> {
  const outfile = join(outdir, "worker.js");
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: "esm",
    target: "es2024",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    keepNames: keepNamesOf(entry),
    external: ["cloudflare:*"],
    define: { "process.env.NODE_ENV": '"production"' },
    loader: { ".js": "jsx", ".mjs": "jsx", ".cjs": "jsx" },
    logLevel: "warning",
    plugins: policyFiles ? [policyFilesPlugin(policyFiles)] : [],
  });
  return outfile;
}

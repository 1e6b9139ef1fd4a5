import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const manifest = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { dependencies: Record<string, string> };

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`. */
const packageOf = (specifier: string) =>
  specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");

/** The npm packages the bundled agent imports at run time, as scripts/build-agent.mjs bundles it. */
async function packagesTheAgentImports(): Promise<Set<string>> {
  const result = await build({
    entryPoints: [`${ROOT}src/agent/main.ts`],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    write: false,
    metafile: true,
    outfile: "tollgate.mjs",
    logLevel: "silent",
  });
  const imports = Object.values(result.metafile.outputs).flatMap((output) => output.imports);
  return new Set(imports.filter((entry) => entry.external && !entry.path.startsWith("node:")).map((entry) => packageOf(entry.path)));
}

/** The peer dependencies of `name` as installed (npm installs a package's peers with it). */
function peersOf(name: string): string[] {
  const installed = JSON.parse(readFileSync(`${ROOT}node_modules/${name}/package.json`, "utf8")) as { peerDependencies?: Record<string, string> };
  return Object.keys(installed.peerDependencies ?? {});
}

describe("the published package's dependencies", () => {
  it("are what the installed agent runs: each one it imports (or a peer of one), and nothing else", async () => {
    const imported = await packagesTheAgentImports();
    const needed = new Set([...imported, ...[...imported].flatMap(peersOf).filter((peer) => peer in manifest.dependencies)]);
    expect(Object.keys(manifest.dependencies).sort()).toEqual([...needed].sort());
  });
});

/**
 * The agent as a user gets it: plain `npm pack` of this checkout (its prepack script bundles the agent),
 * installed with npm into a temporary folder outside the checkout, run from there. Packed and installed once
 * per run.
 */

import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

export interface InstalledAgent {
  /** The consumer project the tarball was installed into (outside the checkout). */
  readonly project: string;
  /** node_modules/.bin/tollgate of that project. */
  readonly bin: string;
  /** The package's ngrok-bin folder: ngrok's clients point their binPath here. */
  readonly ngrokDir: string;
}

let installed: Promise<InstalledAgent> | undefined;

/** Packs the checkout (`npm pack`) and installs the tarball into a new temporary project. */
export function installedAgent(): Promise<InstalledAgent> {
  return (installed ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), "tollgate-pack-"));
    const { stdout } = await run("npm", ["pack", "--pack-destination", dir, "--silent"], { cwd: ROOT });
    const { name } = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { name: string };
    const tarball = join(dir, stdout.trim().split("\n").pop()!);
    const project = join(dir, "consumer");
    await run("mkdir", ["-p", project]);
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true }));
    // The dependencies come from npm's cache when this machine installed the checkout already.
    await run("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline", tarball], { cwd: project });
    return { project, bin: join(project, "node_modules/.bin/tollgate"), ngrokDir: join(project, "node_modules", name, "ngrok-bin") };
  })());
}

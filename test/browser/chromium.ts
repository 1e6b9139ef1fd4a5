/**
 * Launches the headless Chromium that test/browser/chromium-choice.ts picked. The pinned @sparticuz/chromium
 * package ships its browser brotli-compressed (no install script, no download), with the NSS libraries it
 * links against and a font; they are unpacked once per package version into the temp directory, into a
 * staging directory renamed into place, so a concurrent or interrupted run never sees half a binary (the
 * package's own `executablePath()` unpacks straight to /tmp/chromium and reuses whatever is there).
 */

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import type { BrowserHost, ChromiumChoice, FileProbe } from "./chromium-choice.ts";

const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"];

/** The pinned package's folder, or undefined when it is not installed (its exports map hides package.json and bin/). */
function packageFolder(): string | undefined {
  try {
    return join(dirname(createRequire(import.meta.url).resolve("@sparticuz/chromium")), "..");
  } catch {
    return undefined;
  }
}

/** This machine, as the choice sees it. */
export function thisHost(): BrowserHost {
  const folder = packageFolder();
  return { platform: process.platform, arch: process.arch, env: process.env, home: homedir(), packagedArchive: folder && join(folder, "bin/chromium.br") };
}

/** The real file system, as the choice sees it. */
export const fileSystem: FileProbe = {
  isFile: (path) => statSync(path, { throwIfNoEntry: false })?.isFile() ?? false,
  list: (dir) => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  },
};

/** `inflate` unpacks into `os.tmpdir()`, which it reads synchronously when called: point TMPDIR at `dir` for that call. */
async function inflateInto(dir: string, archive: string): Promise<string> {
  const { inflate } = await import("@sparticuz/chromium");
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return inflate(archive);
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

/** The unpacked packaged browser: its directory holds `chromium`, `al2023/lib` (libnss3 and friends) and `fonts/`. */
async function unpacked(archive: string): Promise<string> {
  const bin = dirname(archive);
  const { version } = JSON.parse(readFileSync(join(bin, "../package.json"), "utf8")) as { version: string };
  const home = join(tmpdir(), `tollgate-chromium-${version}`);
  if (existsSync(join(home, "chromium"))) return home;
  const staging = await mkdtemp(`${home}-staging-`);
  try {
    await Promise.all(["chromium.br", "al2023.tar.br", "fonts.tar.br"].map((name) => inflateInto(staging, join(bin, name))));
    // The package's fonts.conf names Lambda's directories; this one names ours, then the system's.
    await writeFile(
      join(staging, "fonts.conf"),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${home}/fonts</dir>\n  <dir>/usr/share/fonts</dir>\n  <cachedir>${home}/fonts-cache</cachedir>\n</fontconfig>\n`,
    );
    await rename(staging, home);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    // Another run renamed its copy into place first: use that one.
    if (existsSync(join(home, "chromium"))) return home;
    throw error;
  }
  return home;
}

/** Launches the chosen headless Chromium; the packaged one with its bundled libraries ahead of the system's. */
export async function launchChromium(choice: ChromiumChoice): Promise<Browser> {
  if (choice.kind === "none") throw new Error(`no browser to launch: ${choice.reason}`);
  if (choice.kind === "executable") return chromium.launch({ executablePath: choice.path, args: ARGS });
  const home = await unpacked(choice.archive);
  return chromium.launch({
    executablePath: join(home, "chromium"),
    args: ARGS,
    env: {
      ...process.env,
      LD_LIBRARY_PATH: [join(home, "al2023/lib"), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
      FONTCONFIG_PATH: home,
    },
  });
}

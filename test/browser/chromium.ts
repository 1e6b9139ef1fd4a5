/**
 * Headless Chromium from the @sparticuz/chromium npm package, so `npm install` is all the browser test
 * needs: the package ships the binary brotli-compressed (no install script, no download), with the NSS
 * libraries it links against and a font. They are unpacked once per package version into the temp
 * directory, into a staging directory renamed into place, so a concurrent or interrupted run never sees
 * half a binary (the package's own `executablePath()` unpacks straight to /tmp/chromium and reuses
 * whatever is there).
 */

import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { inflate } from "@sparticuz/chromium";
import { chromium, type Browser } from "playwright-core";

// The package's exports map hides package.json and bin/; its entry point is build/index.js.
const PACKAGE = join(dirname(createRequire(import.meta.url).resolve("@sparticuz/chromium")), "..");
const { version } = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8")) as { version: string };
const BIN = join(PACKAGE, "bin");

/** `inflate` unpacks into `os.tmpdir()`, which it reads synchronously when called: point TMPDIR at `dir` for that call. */
function inflateInto(dir: string, archive: string): Promise<string> {
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return inflate(join(BIN, archive));
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

/** The unpacked browser: its directory holds `chromium`, `al2023/lib` (libnss3 and friends) and `fonts/`. */
async function unpacked(): Promise<string> {
  const home = join(tmpdir(), `tollgate-chromium-${version}`);
  if (existsSync(join(home, "chromium"))) return home;
  const staging = await mkdtemp(`${home}-staging-`);
  try {
    await Promise.all(["chromium.br", "al2023.tar.br", "fonts.tar.br"].map((archive) => inflateInto(staging, archive)));
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

/** Launches the packaged headless Chromium, with its bundled libraries ahead of the system's. */
export async function launchChromium(): Promise<Browser> {
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new Error(`@sparticuz/chromium ships a Chromium for x86-64 Linux only, not for ${process.platform} ${process.arch}`);
  }
  const home = await unpacked();
  return chromium.launch({
    executablePath: join(home, "chromium"),
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
    env: {
      ...process.env,
      LD_LIBRARY_PATH: [join(home, "al2023/lib"), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
      FONTCONFIG_PATH: home,
    },
  });
}

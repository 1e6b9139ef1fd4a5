/**
 * Which Chromium the browser test drives, found without downloading anything: the one `CHROMIUM_PATH` names;
 * else the pinned @sparticuz/chromium package (x86-64 Linux only); else one that Playwright installed; else a
 * system Chrome or Chromium. Pure: the host and its file system come in as values, so every branch is tested
 * in plain Node (test/browser/chromium-choice.test.ts).
 */

import { posix, win32 } from "node:path";

export interface BrowserHost {
  readonly platform: NodeJS.Platform;
  readonly arch: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly home: string;
  /** The pinned package's compressed browser (`bin/chromium.br`), or undefined when the package is not installed. */
  readonly packagedArchive: string | undefined;
}

/** What the choice may look at: whether a file exists, and a directory's entries ([] when there is none). */
export interface FileProbe {
  isFile(path: string): boolean;
  list(dir: string): readonly string[];
}

export type ChromiumChoice =
  | { readonly kind: "packaged"; readonly archive: string }
  | { readonly kind: "executable"; readonly path: string; readonly source: string }
  | { readonly kind: "none"; readonly reason: string };

/** Playwright's browser folders (chromium-<revision>, chromium_headless_shell-<revision>) → executable, old and new layouts. */
const PLAYWRIGHT_LAYOUTS: Partial<Record<string, ReadonlyArray<readonly string[]>>> = {
  "linux-x64": [
    ["chrome-linux64", "chrome"],
    ["chrome-linux", "chrome"],
    ["chrome-headless-shell-linux64", "chrome-headless-shell"],
    ["chrome-linux", "headless_shell"],
  ],
  "linux-arm64": [
    ["chrome-linux-arm64", "chrome"],
    ["chrome-linux", "chrome"],
    ["chrome-headless-shell-linux-arm64", "chrome-headless-shell"],
    ["chrome-linux", "headless_shell"],
  ],
  "darwin-x64": [
    ["chrome-mac-x64", "Google Chrome for Testing.app", "Contents", "MacOS", "Google Chrome for Testing"],
    ["chrome-mac", "Chromium.app", "Contents", "MacOS", "Chromium"],
    ["chrome-headless-shell-mac-x64", "chrome-headless-shell"],
    ["chrome-mac", "headless_shell"],
  ],
  "darwin-arm64": [
    ["chrome-mac-arm64", "Google Chrome for Testing.app", "Contents", "MacOS", "Google Chrome for Testing"],
    ["chrome-mac", "Chromium.app", "Contents", "MacOS", "Chromium"],
    ["chrome-headless-shell-mac-arm64", "chrome-headless-shell"],
    ["chrome-mac", "headless_shell"],
  ],
  "win32-x64": [
    ["chrome-win64", "chrome.exe"],
    ["chrome-win", "chrome.exe"],
    ["chrome-headless-shell-win64", "chrome-headless-shell.exe"],
    ["chrome-win", "headless_shell.exe"],
  ],
};

/** Where Chrome and Chromium install themselves, per platform. */
function systemPaths(host: BrowserHost): string[] {
  switch (host.platform) {
    case "linux":
      return [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
        "/usr/bin/google-chrome-stable",
        "/snap/bin/chromium",
        "/opt/google/chrome/chrome",
      ];
    case "darwin":
      return [
        "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
        "/Applications/Chromium.app/Contents/MacOS/Chromium",
        posix.join(host.home, "Applications/Google Chrome.app/Contents/MacOS/Google Chrome"),
        posix.join(host.home, "Applications/Chromium.app/Contents/MacOS/Chromium"),
      ];
    case "win32":
      return [host.env.PROGRAMFILES, host.env["PROGRAMFILES(X86)"], host.env.LOCALAPPDATA]
        .filter((dir): dir is string => Boolean(dir))
        .flatMap((dir) => [win32.join(dir, "Google/Chrome/Application/chrome.exe"), win32.join(dir, "Chromium/Application/chrome.exe")]);
    default:
      return [];
  }
}

/** Playwright's download folder: PLAYWRIGHT_BROWSERS_PATH, else its per-platform cache (as playwright-core computes it). */
function playwrightRoot(host: BrowserHost): string | undefined {
  const set = host.env.PLAYWRIGHT_BROWSERS_PATH;
  // "0" means "inside node_modules/playwright-core/.local-browsers", which this checkout never fills.
  if (set && set !== "0") return set;
  if (host.platform === "linux") return posix.join(host.env.XDG_CACHE_HOME || posix.join(host.home, ".cache"), "ms-playwright");
  if (host.platform === "darwin") return posix.join(host.home, "Library/Caches/ms-playwright");
  if (host.platform === "win32") return win32.join(host.env.LOCALAPPDATA || win32.join(host.home, "AppData/Local"), "ms-playwright");
  return undefined;
}

/** The newest Playwright-installed Chromium (full browser before headless shell), if any. */
function playwrightExecutable(host: BrowserHost, probe: FileProbe): string | undefined {
  const root = playwrightRoot(host);
  const layouts = PLAYWRIGHT_LAYOUTS[`${host.platform}-${host.arch}`];
  if (!root || !layouts) return undefined;
  const join = host.platform === "win32" ? win32.join : posix.join;
  const revision = (name: string) => Number(name.slice(name.lastIndexOf("-") + 1)) || 0;
  for (const prefix of ["chromium-", "chromium_headless_shell-"]) {
    const folders = probe
      .list(root)
      .filter((name) => name.startsWith(prefix))
      .sort((a, b) => revision(b) - revision(a));
    for (const folder of folders) {
      for (const layout of layouts) {
        const path = join(root, folder, ...layout);
        if (probe.isFile(path)) return path;
      }
    }
  }
  return undefined;
}

/** Picks the browser; `none` carries one sentence saying why and how to provide one. */
export function chooseChromium(host: BrowserHost, probe: FileProbe): ChromiumChoice {
  const named = host.env.CHROMIUM_PATH;
  if (named) {
    return probe.isFile(named)
      ? { kind: "executable", path: named, source: "CHROMIUM_PATH" }
      : { kind: "none", reason: `CHROMIUM_PATH names ${named}, which is not a file` };
  }
  if (host.platform === "linux" && host.arch === "x64" && host.packagedArchive && probe.isFile(host.packagedArchive)) {
    return { kind: "packaged", archive: host.packagedArchive };
  }
  const playwright = playwrightExecutable(host, probe);
  if (playwright) return { kind: "executable", path: playwright, source: "Playwright's browsers" };
  const system = systemPaths(host).find((path) => probe.isFile(path));
  if (system) return { kind: "executable", path: system, source: "the system" };
  return {
    kind: "none",
    reason:
      `no Chromium on ${host.platform} ${host.arch}: @sparticuz/chromium serves x86-64 Linux only, and neither Playwright's ` +
      "browsers nor a system Chrome or Chromium were found; set CHROMIUM_PATH to one",
  };
}

/**
 * Whether a missing browser must fail the run rather than skip the test: in CI on x86-64 Linux, where the
 * pinned package always provides one, its absence means the checkout or the install is broken.
 */
export function missingBrowserFails(host: Pick<BrowserHost, "platform" | "arch" | "env">): boolean {
  const ci = host.env.CI;
  return (ci === "true" || ci === "1") && host.platform === "linux" && host.arch === "x64";
}

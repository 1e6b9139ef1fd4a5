/** Which Chromium the browser test takes on each kind of machine, and when a missing one fails the run. */

import { describe, expect, it } from "vitest";
import { chooseChromium, missingBrowserFails, type BrowserHost, type FileProbe } from "./chromium-choice.ts";

const ARCHIVE = "/repo/node_modules/@sparticuz/chromium/bin/chromium.br";

const linuxX64: BrowserHost = { platform: "linux", arch: "x64", env: {}, home: "/home/dev", packagedArchive: ARCHIVE };
const linuxArm: BrowserHost = { ...linuxX64, arch: "arm64" };
const macArm: BrowserHost = { platform: "darwin", arch: "arm64", env: {}, home: "/Users/dev", packagedArchive: ARCHIVE };
const windows: BrowserHost = {
  platform: "win32",
  arch: "x64",
  env: { PROGRAMFILES: "C:\\Program Files", LOCALAPPDATA: "C:\\Users\\dev\\AppData\\Local" },
  home: "C:\\Users\\dev",
  packagedArchive: ARCHIVE,
};

/** A file system holding exactly `files`; directories are whatever their paths imply. */
function filesystem(...files: string[]): FileProbe {
  return {
    isFile: (path) => files.includes(path),
    list: (dir) => [
      ...new Set(files.filter((file) => file.startsWith(`${dir}/`) || file.startsWith(`${dir}\\`)).map((file) => file.slice(dir.length + 1).split(/[\\/]/)[0])),
    ],
  };
}

describe("choosing the browser test's Chromium", () => {
  it("takes the pinned package on x86-64 Linux", () => {
    expect(chooseChromium(linuxX64, filesystem(ARCHIVE, "/usr/bin/chromium"))).toEqual({ kind: "packaged", archive: ARCHIVE });
  });

  it("takes the file CHROMIUM_PATH names before anything else", () => {
    const host = { ...linuxX64, env: { CHROMIUM_PATH: "/opt/my/chrome" } };
    expect(chooseChromium(host, filesystem(ARCHIVE, "/opt/my/chrome"))).toEqual({ kind: "executable", path: "/opt/my/chrome", source: "CHROMIUM_PATH" });
  });

  it("names CHROMIUM_PATH in the reason when it points at nothing, rather than quietly taking another browser", () => {
    const host = { ...linuxX64, env: { CHROMIUM_PATH: "/opt/gone/chrome" } };
    expect(chooseChromium(host, filesystem(ARCHIVE))).toEqual({ kind: "none", reason: "CHROMIUM_PATH names /opt/gone/chrome, which is not a file" });
  });

  it("on ARM Linux passes over the package (x86-64 only) and takes Playwright's newest Chromium", () => {
    const found = chooseChromium(
      linuxArm,
      filesystem(
        ARCHIVE,
        "/home/dev/.cache/ms-playwright/chromium-1100/chrome-linux/chrome",
        "/home/dev/.cache/ms-playwright/chromium-1200/chrome-linux-arm64/chrome",
        "/usr/bin/chromium",
      ),
    );
    expect(found).toEqual({
      kind: "executable",
      path: "/home/dev/.cache/ms-playwright/chromium-1200/chrome-linux-arm64/chrome",
      source: "Playwright's browsers",
    });
  });

  it("looks for Playwright's browsers where PLAYWRIGHT_BROWSERS_PATH says, and takes a headless shell when that is all there is", () => {
    const host = { ...linuxArm, env: { PLAYWRIGHT_BROWSERS_PATH: "/srv/pw" } };
    const shell = "/srv/pw/chromium_headless_shell-1200/chrome-headless-shell-linux-arm64/chrome-headless-shell";
    expect(chooseChromium(host, filesystem(shell, "/home/dev/.cache/ms-playwright/chromium-1200/chrome-linux-arm64/chrome"))).toEqual({
      kind: "executable",
      path: shell,
      source: "Playwright's browsers",
    });
  });

  it("on ARM Linux without Playwright takes the system Chromium", () => {
    expect(chooseChromium(linuxArm, filesystem("/usr/bin/chromium-browser"))).toEqual({
      kind: "executable",
      path: "/usr/bin/chromium-browser",
      source: "the system",
    });
  });

  it("on macOS takes Playwright's Chrome for Testing from the Caches folder, else the installed Google Chrome", () => {
    const playwright =
      "/Users/dev/Library/Caches/ms-playwright/chromium-1200/chrome-mac-arm64/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing";
    const chrome = "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome";
    expect(chooseChromium(macArm, filesystem(playwright, chrome))).toMatchObject({ kind: "executable", path: playwright });
    expect(chooseChromium(macArm, filesystem(chrome))).toEqual({ kind: "executable", path: chrome, source: "the system" });
  });

  it("on Windows takes Chrome from Program Files", () => {
    expect(chooseChromium(windows, filesystem("C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe"))).toEqual({
      kind: "executable",
      path: "C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe",
      source: "the system",
    });
  });

  it("with no browser anywhere answers none, with one sentence that names the machine and CHROMIUM_PATH", () => {
    expect(chooseChromium(macArm, filesystem())).toEqual({
      kind: "none",
      reason:
        "no Chromium on darwin arm64: @sparticuz/chromium serves x86-64 Linux only, and neither Playwright's browsers nor a system Chrome or Chromium were found; set CHROMIUM_PATH to one",
    });
  });

  it("on x86-64 Linux whose package was not installed falls back to a system browser", () => {
    expect(chooseChromium({ ...linuxX64, packagedArchive: undefined }, filesystem("/usr/bin/google-chrome"))).toMatchObject({ path: "/usr/bin/google-chrome" });
  });
});

describe("when a missing browser fails the run instead of skipping the test", () => {
  it("fails in CI on x86-64 Linux, where the pinned package always provides one", () => {
    expect(missingBrowserFails({ ...linuxX64, env: { CI: "true" } })).toBe(true);
    expect(missingBrowserFails({ ...linuxX64, env: { CI: "1" } })).toBe(true);
  });

  it("skips outside CI, in CI elsewhere, and when CI is set to false", () => {
    expect(missingBrowserFails(linuxX64)).toBe(false);
    expect(missingBrowserFails({ ...linuxX64, env: { CI: "false" } })).toBe(false);
    expect(missingBrowserFails({ ...linuxArm, env: { CI: "true" } })).toBe(false);
    expect(missingBrowserFails({ ...macArm, env: { CI: "true" } })).toBe(false);
  });
});

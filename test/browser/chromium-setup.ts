/**
 * Global setup of the browser project: picks the Chromium once per run and hands the choice to the test
 * (inject("chromium")). Without one it prints one line saying why the test skips, except in CI on x86-64
 * Linux, where the pinned package must be there and its absence fails the run.
 */

import type { TestProject } from "vitest/node";
import { chooseChromium, missingBrowserFails, type ChromiumChoice } from "./chromium-choice.ts";
import { fileSystem, thisHost } from "./chromium.ts";

declare module "vitest" {
  export interface ProvidedContext {
    chromium: ChromiumChoice;
  }
}

export default function setup(project: TestProject): void {
  const host = thisHost();
  const choice = chooseChromium(host, fileSystem);
  if (choice.kind === "none") {
    if (missingBrowserFails(host)) throw new Error(`the browser test must run in CI on x86-64 Linux, but ${choice.reason}`);
    console.log(`browser test skipped: ${choice.reason}`);
  }
  project.provide("chromium", choice);
}

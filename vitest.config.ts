import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { createHash } from "node:crypto";
import { TEST_KEYS } from "./test/worker/management/keys.ts";

/** Management API keys of the worker tests, in the TOLLGATE_API_KEYS format (account:sha256 hex). */
const testApiKeys = Object.values(TEST_KEYS)
  .map(({ account, key }) => `${account}:${createHash("sha256").update(key).digest("hex")}`)
  .join(",");

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          environment: "node",
          include: ["test/unit/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "agent",
          environment: "node",
          include: ["test/agent/**/*.test.ts"],
        },
      },
      {
        // The Worker under `wrangler dev`, the agent and a local upstream, for real (one edge per file).
        test: {
          name: "e2e",
          environment: "node",
          include: ["test/e2e/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The inspector page in headless Chromium (Debian's /usr/bin/chromium) via playwright-core, against a real edge.
        test: {
          name: "browser",
          environment: "node",
          include: ["test/browser/**/*.test.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        plugins: [
          cloudflareTest({
            main: "./src/worker.ts",
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { RATE_LIMIT_TIMEOUT_MS: "2000", TOLLGATE_API_KEYS: testApiKeys } },
          }),
        ],
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          globalSetup: ["test/support/upstream-setup.ts"],
        },
      },
    ],
  },
});

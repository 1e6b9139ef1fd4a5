import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { createHash } from "node:crypto";
import InterleavedSequencer from "./test/support/interleaved-sequencer.ts";
import { workerdLogToFile } from "./test/support/workerd-log.ts";
import { TEST_KEYS } from "./test/worker/management/keys.ts";

// The pool reads wrangler.toml and .dev.vars through wrangler, which says "Using secrets defined in .dev.vars"
// once per worker test file; warnings and errors still show.
process.env.WRANGLER_LOG ??= "warn";

/** Management API keys of the worker tests, in the TOLLGATE_API_KEYS format (account:sha256 hex). */
const testApiKeys = Object.values(TEST_KEYS)
  .map(({ account, key }) => `${account}:${createHash("sha256").update(key).digest("hex")}`)
  .join(",");

/**
 * The Worker's dependencies, pre-bundled once per run into one module each. The pool inlines every dependency,
 * so without this each test file's workerd fetches and evaluates zod, hono, CEL and the rest module by module
 * through vitest's module runner: about half of each file's import time, and the pool's main thread is the
 * bottleneck of the worker tests.
 */
const workerDependencies = [
  "zod",
  "hono",
  "hono/http-exception",
  "hono/streaming",
  "hono/utils/http-status",
  "hono/accepts",
  "@hono/zod-openapi",
  "@bufbuild/cel",
  "@bufbuild/cel/ext",
  "@bufbuild/re2",
  "@bufbuild/protobuf",
  "ipaddr.js",
  "yaml",
  // 46 modules fetched one by one otherwise, each a round trip to the pool's main thread.
  "jose",
  "re2js",
  "eventsource-parser",
];

/** Records the process groups a run starts (wrangler dev and its workerd) and kills any left at the end. */
const processGroups = "test/support/process-groups-setup.ts";

export default defineConfig({
  test: {
    // What tests print (the decision log, errors that tests provoke on purpose) is shown for failed tests only.
    silent: "passed-only",
    // vitest's default on 2 cores is 1 worker, which runs every file in series; the e2e and browser files
    // mostly wait on wrangler dev and the network, so 3 files at a time fit 2 cores (npm test took 111 s here).
    maxWorkers: 3,
    sequence: { sequencer: InterleavedSequencer },
    projects: [
      {
        test: {
          name: "unit",
          environment: "node",
          // Pure modules with no state of their own (STYLE.md habit 12): one module graph per worker instead of
          // one per file, which cost about a second of each file's time. Spies are undone even after a failure.
          isolate: false,
          restoreMocks: true,
          testTimeout: 30_000,
          include: ["test/unit/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "agent",
          environment: "node",
          testTimeout: 30_000,
          include: ["test/agent/**/*.test.ts"],
        },
      },
      {
        // The Worker under `wrangler dev`, the agent and a local upstream, for real (one edge per file).
        // test/fixtures/ (deliberately failing runs that process-cleanup.e2e.test.ts starts) is in no project.
        test: {
          name: "e2e",
          environment: "node",
          include: ["test/e2e/**/*.test.ts"],
          globalSetup: [processGroups],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The inspector page in headless Chromium via playwright-core, against a real edge. The Chromium is one
        // that needs no download (test/browser/chromium-choice.ts): on x86-64 Linux the @sparticuz/chromium npm
        // package, elsewhere Playwright's or the system's; without one the test skips and says why in one line.
        test: {
          name: "browser",
          environment: "node",
          include: ["test/browser/**/*.test.ts"],
          globalSetup: [processGroups, "test/browser/chromium-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        plugins: [
          cloudflareTest({
            main: "./src/worker.ts",
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                // Ceilings for a busy machine, not behaviour under test: a limiter object that answers late would
                // let requests through (fail open) and a fake agent that sends no heartbeat would lose its session
                // (after 3 intervals), both of which fail tests that are about something else. The test of the
                // timeout sets its own; test/unit/tunnels/session-liveness.test.ts covers missed heartbeats.
                RATE_LIMIT_TIMEOUT_MS: "10000",
                TUNNEL_HEARTBEAT_MS: "30000",
                TUNNEL_BODY_CHANNEL_WAIT_MS: "3000",
                TOLLGATE_API_KEYS: testApiKeys,
                // GET /__tollgate/stats: how many object calls the Worker's own isolate made (rate-limit-burst.test.ts).
                TOLLGATE_DEBUG_STATS: "1",
              },
            },
          }),
          workerdLogToFile(),
        ],
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          deps: { optimizer: { ssr: { enabled: true, include: workerDependencies } } },
          // A ceiling, not a speed requirement: heavy tests (10,000 bot users) need more than 5 s on a busy machine.
          testTimeout: 30_000,
          globalSetup: ["test/support/upstream-setup.ts"],
        },
      },
    ],
  },
});

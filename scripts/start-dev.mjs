// `npm start`: announces the development API key, then runs `wrangler dev` on 127.0.0.1:8787.
// Extra arguments go to wrangler (`npm start -- --port 9000`).
import { spawn } from "node:child_process";
import { lookup } from "node:dns/promises";
import { fileURLToPath } from "node:url";

/** Where Miniflare fetches the `request.cf` object from (workers.cloudflare.com/cf.json), once a day. */
const CF_HOST = "workers.cloudflare.com";

/**
 * Offline, Miniflare's fetch of cf.json fails on every (re)start of the Worker and prints a stack trace each
 * time, then uses its placeholder anyway. When the host does not resolve, skip the fetch
 * (CLOUDFLARE_CF_FETCH_ENABLED=false gives the same placeholder) and say so once. Left alone when the user set it.
 */
async function cfFetchEnv() {
  if (process.env.CLOUDFLARE_CF_FETCH_ENABLED !== undefined || process.env.CLOUDFLARE_CF_FETCH_PATH !== undefined) return {};
  const resolves = await Promise.race([
    lookup(CF_HOST).then(
      () => true,
      () => false,
    ),
    new Promise((resolve) => setTimeout(() => resolve(true), 1500).unref()),
  ]);
  if (resolves) return {};
  console.log(`Offline (${CF_HOST} does not resolve): request.cf is Miniflare's placeholder (colo DFW).`);
  return { CLOUDFLARE_CF_FETCH_ENABLED: "false" };
}

const DEV_KEY = "tgk_dev_local_only_0000000000000000";
const wrangler = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.findIndex((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
  if (index < 0) return { value: fallback, given: false };
  return { value: args[index].includes("=") ? args[index].split("=")[1] : args[index + 1], given: true };
};
const ip = option("ip", "127.0.0.1");
const port = option("port", "8787");
const base = `http://${ip.value}:${port.value}`;

console.log(`
Tollgate management API: ${base}/
Development API key (account acct_dev, from .dev.vars; local only): ${DEV_KEY}

  curl -H "Authorization: Bearer ${DEV_KEY}" -H "Service-Version: 2" ${base}/bot_users

Reference: docs/management-api.md · OpenAPI document: ${base}/openapi.json
`);

const defaults = [...(ip.given ? [] : ["--ip", ip.value]), ...(port.given ? [] : ["--port", port.value])];
const env = { ...process.env, ...(await cfFetchEnv()) };
const child = spawn(process.execPath, [wrangler, "dev", ...defaults, ...args], { stdio: "inherit", env });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

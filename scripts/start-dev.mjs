// `npm start`: announces the development API key, then runs `wrangler dev` on 127.0.0.1:8787.
// Extra arguments go to wrangler (`npm start -- --port 9000`).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

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
const child = spawn(process.execPath, [wrangler, "dev", ...defaults, ...args], { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

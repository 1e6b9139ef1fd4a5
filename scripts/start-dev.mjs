// `npm start`: announces the development API key, then runs `wrangler dev` on 127.0.0.1:8787.
// Extra arguments go to wrangler (`npm start -- --port 9000`).
import { spawn } from "node:child_process";
import { lookup } from "node:dns/promises";
import { createServer } from "node:net";
import { constants } from "node:os";
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

/**
 * Whether something already listens on the port. Without this check a second `npm start` printed the banner
 * below, then workerd's "Address already in use" stack trace, then wrangler's error.
 */
async function portTaken(host, portNumber) {
  const server = createServer();
  return new Promise((resolve) => {
    server.once("error", (error) => resolve(error.code === "EADDRINUSE"));
    server.listen({ host, port: portNumber, exclusive: true }, () => server.close(() => resolve(false)));
  });
}

if (/^\d+$/.test(port.value) && (await portTaken(ip.value, Number(port.value)))) {
  const other = port.value === "9000" ? 9001 : 9000;
  console.error(`Port ${port.value} on ${ip.value} is taken (another npm start?); choose another with: npm start -- --port ${other}`);
  process.exit(1);
}

console.log(`
Tollgate management API: ${base}/
Development API key (account acct_dev, from .dev.vars; local only): ${DEV_KEY}

  curl -H "Authorization: Bearer ${DEV_KEY}" -H "Service-Version: 2" ${base}/bot_users

Reference: docs/management-api.md · OpenAPI document: ${base}/openapi.json
`);

const defaults = [...(ip.given ? [] : ["--ip", ip.value]), ...(port.given ? [] : ["--port", port.value])];
const env = { ...process.env, ...(await cfFetchEnv()) };

// wrangler leads a process group of its own (its Node, wrangler's CLI, esbuild, two workerd), so that one
// signal reaches all of it whatever state wrangler is in; this script then exits with 128 + the signal's
// number. On POSIX `detached` is setsid(): a session without a controlling terminal, where reading the
// terminal raises no SIGTTIN, so wrangler's hotkeys still work; Ctrl-C in the terminal reaches this process,
// which passes it on. Windows has no process groups: there the signal goes to wrangler alone, as before.
const groups = process.platform !== "win32";
const child = spawn(process.execPath, [wrangler, "dev", ...defaults, ...args], { stdio: "inherit", env, detached: groups });

/** Sends `signal` to wrangler's whole group (or to wrangler alone without groups); quiet if it is gone. */
function signalTree(signal) {
  try {
    if (groups) process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    // gone already
  }
}

let received;
function stop(signal) {
  const code = 128 + constants.signals[signal];
  // Already gone, or a second signal (someone insisting): kill what is left and exit at once.
  if (received || child.exitCode !== null || child.signalCode !== null) {
    signalTree("SIGKILL");
    process.exit(code);
  }
  received = signal;
  signalTree(signal);
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => stop(signal));

// Under npm, `sh -c` stands between npm and this script; dash does not pass signals on, so a SIGTERM to npm
// killed the shell and left this script, wrangler and workerd running. That shell only waits for this
// process: if it is gone, it was killed, and so is this.
const npmParent = process.env.npm_lifecycle_event === "start" ? process.ppid : undefined;
if (npmParent !== undefined) {
  const watch = setInterval(() => {
    if (process.ppid === npmParent) return;
    clearInterval(watch);
    stop("SIGTERM");
  }, 250).unref();
}

child.on("exit", (code, signal) => {
  // What wrangler leaves behind in its group (a workerd it could not stop) goes with it.
  if (groups) signalTree("SIGKILL");
  if (received) process.exit(128 + constants.signals[received]);
  process.exit(code ?? 128 + (constants.signals[signal] ?? 0));
});

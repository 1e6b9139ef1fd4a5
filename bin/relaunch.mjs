// Starts the command again, once, in a Node with a floor under V8's old-generation limit (HEAP_FLOOR_FLAG).
//
// Why: relaying a large body churns through Buffers. Once a Node process has sat idle, V8 shrinks its heap limits,
// and from then on that churn sets off a full mark-compact every few MiB. The agent's CPU per 10 MiB upload went
// from about 13 ms to 38 ms after 15 s of idle, and per 10 MiB download from about 27 to 42 ms; with the floor, 19
// and 26 ms (docs/benchmark.md, 2026-11-25). V8 reads the setting only when a process starts, and Node takes it only
// on its command line (not from NODE_OPTIONS), so the command runs as a child of this process.
//
// The child gets its own session (`detached`), so a terminal's signals reach only this process, which passes each
// on once: a Ctrl-C is one Ctrl-C however it was sent. This process exits as the child did. If this process dies
// without passing anything on (SIGKILL), the IPC channel closes and the child stops as on Ctrl-C (src/agent/main.ts).
// Windows keeps one process: its console delivers Ctrl-C to every process attached to it, and it has no sessions.
// Other Node options this process was started with (e.g. --cpu-prof) are passed on to the child.

import { spawn } from "node:child_process";

export const HEAP_FLOOR_FLAG = "--initial-old-space-size=64";
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGWINCH"];

/** True when the command now runs in a child (this process only waits for it); false: run it here. */
export function relaunchWithHeapFloor() {
  const script = process.argv[1];
  if (process.platform === "win32" || script === undefined) return false;
  // Node started with the floor, or under a debugger (a child would want the same inspector port): run here.
  if (process.execArgv.some((arg) => arg.startsWith("--initial-old-space-size") || arg.startsWith("--inspect"))) return false;
  const child = spawn(process.execPath, [...process.execArgv, HEAP_FLOOR_FLAG, script, ...process.argv.slice(2)], {
    stdio: ["inherit", "inherit", "inherit", "ipc"],
    detached: true,
  });
  const forward = (signal) => child.kill(signal);
  for (const signal of FORWARDED) process.on(signal, forward);
  // Ctrl-Z: the child has no terminal to stop it, so it is stopped and continued along with this process.
  process.on("SIGTSTP", () => {
    child.kill("SIGSTOP");
    process.kill(process.pid, "SIGSTOP");
  });
  process.on("SIGCONT", () => child.kill("SIGCONT"));
  child.on("error", (error) => {
    process.stderr.write(`tollgate: could not start ${process.execPath}: ${error.message}\n`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    for (const name of [...FORWARDED, "SIGTSTP", "SIGCONT"]) process.removeAllListeners(name);
    process.kill(process.pid, signal);
  });
  return true;
}
